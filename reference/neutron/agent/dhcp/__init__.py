"""neutron-dhcp-agent: keeps one dnsmasq per network in step with the ports."""
