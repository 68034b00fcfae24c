"""What runs inside a guest, on hypervisors that run none: novalab's stand-ins for it."""
