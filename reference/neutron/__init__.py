"""Neutron in small: networks, subnets, ports and security groups, and the agents
that wire and filter them.

``server/`` is neutron-server (the REST API and the ML2-like core plugin with its
RPC callbacks); ``agent/`` holds the DHCP agent (driving dnsmasq), an L2 agent
(driving libvirt; its iptables firewall a stand-in) and the metadata proxy;
cloud-init inside the guest is ``reference/guest`` (``metadata.py``). Left out:
routers, floating IPs, OVS/OVN, segments and IPv6. ``docs/neutron.md`` walks through the whole flow.
"""
