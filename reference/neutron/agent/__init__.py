"""The agents neutron-server drives over RPC: DHCP, L2, and the metadata proxy."""
