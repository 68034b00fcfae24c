"""``POST /os-server-external-events`` (``schemas/server_external_events.py``)."""

from __future__ import annotations

from novalab.reference.nova.api.schemas import parameter_types as types

EVENT_NAMES = ["network-changed", "network-vif-plugged", "network-vif-unplugged",
               "network-vif-deleted", "volume-extended", "power-update",
               "accelerator-request-bound", "volume-reimaged"]

create = {
    "type": "object",
    "properties": {"events": {
        "type": "array", "minItems": 1, "maxItems": 1000,
        "items": {
            "type": "object",
            "properties": {
                "server_uuid": types.uuid,
                "name": {"type": "string", "enum": EVENT_NAMES},
                "status": {"type": "string", "enum": ["failed", "completed", "in-progress"]},
                "tag": {"type": "string", "maxLength": 255},
            },
            "required": ["server_uuid", "name"],
            "additionalProperties": False,
        },
    }},
    "required": ["events"],
    "additionalProperties": False,
}
