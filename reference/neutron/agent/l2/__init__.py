"""neutron-l2-agent: wires ports on a compute host, through libvirt."""
