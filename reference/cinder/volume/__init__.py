"""The volume service side: the API logic, the RPC client and server, the drivers."""
