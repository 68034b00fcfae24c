"""neutron-server's tables and the provisioning-block bookkeeping over them."""
