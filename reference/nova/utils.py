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
