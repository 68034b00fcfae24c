"""The bodies of ``addSecurityGroup`` and ``removeSecurityGroup``
(``schemas/security_groups.py``): a non-empty ``name``, a group's name or id.

Upstream lets other top-level keys through (``additionalProperties: true``, kept
for compatibility); here the body is the action's one key (``actions.py`` reads
the action from it), so nothing else could come along anyway.
"""

from __future__ import annotations


def _action(name: str) -> dict:
    return {"type": "object",
            "properties": {name: {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1,
                                        "maxLength": 255}},
                "required": ["name"], "additionalProperties": False}},
            "required": [name], "additionalProperties": False}


add_security_group = _action("addSecurityGroup")
remove_security_group = _action("removeSecurityGroup")
