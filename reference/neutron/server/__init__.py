"""neutron-server: the v2.0 REST API, the core plugin and its RPC callbacks."""
