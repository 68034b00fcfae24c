"""Nova's view of the network service: the Neutron API client (``nova/network``)."""
