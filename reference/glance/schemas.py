"""The image schema (``glance/api/v2/images.py`` ``get_base_properties``), for request bodies.

Glance validates a create body against its image schema before anything else:
core fields have types, lengths and enums; ``id`` must be a UUID in its dashed
form (the client may choose it, but only as a UUID); everything else is an
*additional property*, a string of at most 255 characters (glance's
``image_property_quota`` bounds how many, 128 by default).

The read-only attributes (``status``, ``size``, ``owner`` ...) appear with an
empty schema: glance answers them with a 403 naming the attribute, not a 400,
so the view does that check after the schema has passed.
"""

from __future__ import annotations

UUID_PATTERN = (r"^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-"
                r"([0-9a-fA-F]){12}$")

DISK_FORMATS = ["ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso",
                "ploop"]
CONTAINER_FORMATS = ["ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed"]
VISIBILITIES = ["community", "public", "private", "shared"]
READ_ONLY = ["status", "owner", "size", "virtual_size", "checksum", "os_hash_algo",
             "os_hash_value", "created_at", "updated_at", "self", "file", "schema",
             "direct_url", "locations"]

MAX_PROPERTIES = 128          # glance's image_property_quota
MAX_TAGS = 128                # glance's image_tag_quota

# No NUL: PostgreSQL cannot store it in a text column (a 500 there, not a 400).
_NO_NUL = r"^[^\x00]*$"
_STRING_255 = {"type": "string", "maxLength": 255, "pattern": _NO_NUL}

IMAGE_CREATE = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": UUID_PATTERN},
        "name": {"type": ["null", "string"], "maxLength": 255, "pattern": _NO_NUL},
        "visibility": {"type": "string", "enum": VISIBILITIES},
        "protected": {"type": "boolean"},
        "os_hidden": {"type": "boolean"},
        "disk_format": {"type": ["null", "string"], "enum": [None, *DISK_FORMATS]},
        "container_format": {"type": ["null", "string"], "enum": [None, *CONTAINER_FORMATS]},
        "min_ram": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "min_disk": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        "tags": {"type": "array", "maxItems": MAX_TAGS, "uniqueItems": True,
                 "items": _STRING_255},
        **{name: {} for name in READ_ONLY},
    },
    "propertyNames": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": _NO_NUL},
    "additionalProperties": _STRING_255,
    "maxProperties": MAX_PROPERTIES,
}
