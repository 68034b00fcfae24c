"""The body of ``POST /servers/{id}/os-volume_attachments`` (``schemas/volumes.py``).

2.1 takes the volume's id and, optionally, a device path (``/dev/vdb``; the
libvirt driver picks the name itself, as upstream's); 2.49 adds a device
``tag``, which novalab refuses (it keeps no device tags). Query strings of the
list: ``limit`` and ``offset`` (``common.limited``).
"""

from __future__ import annotations

import copy

from novalab.reference.nova.api.schemas import parameter_types

# parameter_types.volume_id and the device pattern of create_volume_attachment.
_DEVICE = {"type": ["string", "null"],
           "pattern": r"(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$"}
# parameter_types.tag: at most 60 characters, no comma and no slash.
_TAG = {"type": "string", "pattern": "^[^,/]*$", "maxLength": 60}

create_volume_attachment = {
    "type": "object",
    "properties": {"volumeAttachment": {
        "type": "object",
        "properties": {"volumeId": parameter_types.uuid, "device": _DEVICE},
        "required": ["volumeId"],
        "additionalProperties": False}},
    "required": ["volumeAttachment"],
    "additionalProperties": False,
}
create_volume_attachment_v249 = copy.deepcopy(create_volume_attachment)
create_volume_attachment_v249["properties"]["volumeAttachment"]["properties"]["tag"] = _TAG

CREATE = (("2.1", create_volume_attachment), ("2.49", create_volume_attachment_v249))
