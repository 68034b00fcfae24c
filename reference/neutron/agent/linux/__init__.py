"""What the agents run on a Linux host: here, dnsmasq (or its stand-in)."""
