"""cinder-api: the Block Storage v3 REST API (versions, volumes, attachments, messages)."""
