"""Cinder's view of Glance: image records for cinder-api, image bytes for cinder-volume."""
