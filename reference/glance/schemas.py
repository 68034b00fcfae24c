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

# -- the image schema glance serves at /v2/schemas/image (get_base_properties) ------------
# The properties as upstream's ``glance/api/v2/images.py`` declares them, formats and
# statuses as novalab's glance has them, and the custom properties of upstream's shipped
# ``etc/schema-image.json`` that novalab writes (a snapshot's ``instance_uuid``...).


def _prop(types, description: str, **more) -> dict:
    return {"type": types, "description": description, **more}


def _read_only(types, description: str, **more) -> dict:
    return _prop(types, description, readOnly=True, **more)


STATUSES = ["queued", "saving", "active", "killed", "deleted", "uploading", "importing",
            "pending_delete", "deactivated"]

IMAGE_SCHEMA = {
    "name": "image",
    "properties": {
        "id": _prop("string", "An identifier for the image", pattern=UUID_PATTERN),
        "name": _prop(["null", "string"], "Descriptive name for the image", maxLength=255),
        "status": _read_only("string", "Status of the image", enum=STATUSES),
        "visibility": _prop("string", "Scope of image accessibility", enum=VISIBILITIES),
        "protected": _prop("boolean", "If true, image will not be deletable."),
        "os_hidden": _prop("boolean", "If true, image will not appear in default image list "
                                      "response."),
        "checksum": _read_only(["null", "string"], "md5 hash of image contents.",
                               maxLength=32),
        "os_hash_algo": _read_only(["null", "string"], "Algorithm to calculate the "
                                   "os_hash_value", maxLength=64),
        "os_hash_value": _read_only(["null", "string"], "Hexdigest of the image contents "
                                    "using the algorithm specified by the os_hash_algo",
                                    maxLength=128),
        "owner": _prop(["null", "string"], "Owner of the image", maxLength=255),
        "size": _read_only(["null", "integer"], "Size of image file in bytes"),
        "virtual_size": _read_only(["null", "integer"], "Virtual size of image in bytes"),
        "container_format": _prop(["null", "string"], "Format of the container",
                                  enum=[None, *CONTAINER_FORMATS]),
        "disk_format": _prop(["null", "string"], "Format of the disk",
                             enum=[None, *DISK_FORMATS]),
        "created_at": _read_only("string", "Date and time of image registration"),
        "updated_at": _read_only("string", "Date and time of the last image modification"),
        "tags": _prop("array", "List of strings related to the image",
                      items={"type": "string", "maxLength": 255}),
        "direct_url": _read_only("string", "URL to access the image file kept in external "
                                 "store"),
        "min_ram": _prop("integer", "Amount of ram (in MB) required to boot image."),
        "min_disk": _prop("integer", "Amount of disk space (in GB) required to boot image."),
        "self": _read_only("string", "An image self url"),
        "file": _read_only("string", "An image file url"),
        "schema": _read_only("string", "An image schema url"),
        # etc/schema-image.json's custom properties ("is_base": false).
        "instance_uuid": _prop("string", "Metadata which can be used to record which instance "
                               "this image is associated with. (Informational only, does not "
                               "create an instance snapshot.)", is_base=False),
        "kernel_id": _prop(["null", "string"], "ID of image stored in Glance that should be "
                           "used as the kernel when booting an AMI-style image.",
                           pattern=UUID_PATTERN, is_base=False),
        "ramdisk_id": _prop(["null", "string"], "ID of image stored in Glance that should be "
                            "used as the ramdisk when booting an AMI-style image.",
                            pattern=UUID_PATTERN, is_base=False),
        "architecture": _prop("string", "Operating system architecture as specified in "
                              "https://docs.openstack.org/python-glanceclient/latest/cli/"
                              "property-keys.html", is_base=False),
        "os_distro": _prop("string", "Common name of operating system distribution as "
                           "specified in https://docs.openstack.org/python-glanceclient/"
                           "latest/cli/property-keys.html", is_base=False),
        "os_version": _prop("string", "Operating system version as specified by the "
                            "distributor.", is_base=False),
        "description": _prop("string", "A human-readable string describing this image.",
                             is_base=False),
    },
    "additionalProperties": {"type": "string"},
    "links": [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
              {"rel": "describedby", "href": "{schema}"}],
}

IMAGES_SCHEMA = {
    "name": "images",
    "properties": {
        "images": {"type": "array", "items": IMAGE_SCHEMA},
        "schema": {"type": "string"},
        "first": {"type": "string"},
        "next": {"type": "string"},
    },
    "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
              {"rel": "describedby", "href": "{schema}"}],
}

# -- a PATCH body: JSON patch (RFC 6902) as glance's v2.1 media type takes it ---------------

IMAGE_PATCH = {
    "type": "array",
    "maxItems": MAX_PROPERTIES + 32,
    "items": {
        "type": "object",
        "properties": {
            "op": {"type": "string", "enum": ["add", "replace", "remove"]},
            # One level: /name, /hw_disk_bus (a "/" inside a name is "~1").
            "path": {"type": "string", "pattern": r"^/[^/\x00]{1,255}$"},
            "value": {},
        },
        "required": ["op", "path"],
        "additionalProperties": False,
    },
}
