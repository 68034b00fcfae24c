"""What an instance remembers of its image (``nova/utils.py``).

At boot nova-api copies the image's properties into the instance's system
metadata as ``image_<key>`` (and the four inheritable core fields: ``min_ram``,
``min_disk``, ``disk_format``, ``container_format``). A snapshot (``createImage``,
shelve) starts its image from them again, so the snapshot inherits what the
server booted from even when that image is gone from Glance.
"""

from __future__ import annotations

SM_IMAGE_PROP_PREFIX = "image_"
SM_INHERITABLE_KEYS = ("min_ram", "min_disk", "disk_format", "container_format")
# Large structured values upstream never copies (they do not fit a metadata row).
SM_SKIP_KEYS = ("img_signature_hash_method", "img_signature", "img_signature_key_type",
                "img_signature_certificate_uuid")


def get_system_metadata_from_image(image_meta: dict, flavor: dict | None = None) -> dict:
    """``image_<key>`` entries for an image meta dict (core fields + ``properties``).

    ``min_disk`` is raised to the flavor's root disk, as upstream: the snapshot of
    a server is at least as big as the disk it ran on.
    """
    system_meta = {f"{SM_IMAGE_PROP_PREFIX}{key}": str(value)[:255]
                   for key, value in (image_meta.get("properties") or {}).items()
                   if key not in SM_SKIP_KEYS}
    for key in SM_INHERITABLE_KEYS:
        value = image_meta.get(key)
        if key == "min_disk" and flavor:
            value = max(value or 0, flavor["root_gb"])
        if value is not None:
            system_meta[f"{SM_IMAGE_PROP_PREFIX}{key}"] = value
    return system_meta


def get_image_from_system_metadata(system_meta: dict) -> dict:
    """The reverse: an image meta dict. As upstream, every other key (``shelved_at``
    too, once set) becomes a property, with the ``image_`` prefix taken off."""
    image_meta: dict = {}
    properties: dict = {}
    for key, value in (system_meta or {}).items():
        if value is None:
            continue
        key = key.removeprefix(SM_IMAGE_PROP_PREFIX)
        if key in SM_SKIP_KEYS:
            continue
        if key in SM_INHERITABLE_KEYS:
            image_meta[key] = value
        else:
            properties[key] = value
    image_meta["properties"] = properties
    return image_meta


# The flavor fields an instance keeps of the flavor it booted with (instance_extra.flavor).
INSTANCE_FLAVOR_KEYS = ("flavorid", "name", "memory_mb", "vcpus", "root_gb", "ephemeral_gb",
                        "swap", "extra_specs")


def generate_reservation_id() -> str:
    """``r-`` and eight random characters: one per create request (``nova/utils.py``)."""
    import random
    import string

    alphabet = string.ascii_lowercase + string.digits
    return "r-" + "".join(random.choice(alphabet) for _ in range(8))


def sanitize_hostname(name: str, default_name: str = "server") -> str:
    """The guest's hostname from its display name (``nova.utils.sanitize_hostname``):
    latin-1, at most 63 characters, spaces, underscores and dots as dashes, only
    ``[a-z0-9-]``, no leading or trailing dots and dashes (what the metadata
    service serves as ``hostname`` too)."""
    import re

    hostname = (name or "").encode("latin-1", "ignore").decode("latin-1")[:63]
    hostname = re.sub(r"[ _.]", "-", hostname)
    hostname = re.sub(r"[^\w.-]+", "", hostname, flags=re.ASCII)
    hostname = hostname.lower().strip(".-")
    return hostname or default_name
