"""Volume drivers: the backend-specific half of cinder-volume (only RBD here)."""
