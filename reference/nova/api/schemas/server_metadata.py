"""The bodies of the server metadata API (``schemas/server_metadata.py``).

``metadata`` is ``parameter_types.metadata`` (keys of at most 255 characters
from ``[a-zA-Z0-9-_:. ]``, string values of at most 255); ``PUT
/servers/{id}/metadata/{key}`` takes exactly one item under ``meta``.
"""

from __future__ import annotations

from novalab.reference.nova.api.schemas import parameter_types as types

create = {
    "title": "Server metadata",
    "type": "object",
    "properties": {"metadata": types.metadata},
    "required": ["metadata"],
    "additionalProperties": False,
}

update_all = create

metadata_update = dict(types.metadata, minProperties=1, maxProperties=1)

update = {
    "title": "Server metadata item",
    "type": "object",
    "properties": {"meta": metadata_update},
    "required": ["meta"],
    "additionalProperties": False,
}

CREATE = (("2.1", create),)
UPDATE_ALL = (("2.1", update_all),)
UPDATE = (("2.1", update),)
