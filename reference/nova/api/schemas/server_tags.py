"""The bodies of the server tags API (``schemas/server_tags.py``, 2.26).

A tag is a non-empty string of at most 60 characters without ``/`` or ``,``
(``parameter_types.tag``, ``objects/tag.py`` MAX_TAG_LENGTH); a server has at
most 50 (``objects/instance.py`` MAX_TAG_COUNT). ``PUT /servers/{id}/tags/{tag}``
takes no body (``null``).
"""

from __future__ import annotations

MAX_TAG_LENGTH = 60
MAX_TAG_COUNT = 50

tag = {"type": "string", "pattern": "^[^,/]*$", "minLength": 1, "maxLength": MAX_TAG_LENGTH}

update_all = {
    "title": "Server tags",
    "type": "object",
    "properties": {"tags": {"type": "array", "items": tag, "maxItems": MAX_TAG_COUNT}},
    "required": ["tags"],
    "additionalProperties": False,
}

update = {"title": "Server tag", "type": "null"}

UPDATE_ALL = (("2.26", update_all),)
