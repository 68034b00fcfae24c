"""The bodies of the shelve actions (``schemas/shelve.py``), at microversion 2.1.

Each body is one key naming the action. Upstream leaves its value unchecked at
2.1 (``{"shelve": null}`` is what clients send; a TODO restricts it to null in a
later version); ``unshelve`` takes ``availability_zone`` from 2.77 and ``host``
from 2.91, which novalab does not serve.
"""

from __future__ import annotations

shelve = {
    "type": "object",
    "properties": {"shelve": {}},
    "required": ["shelve"],
    "additionalProperties": False,
}

shelve_offload = {
    "type": "object",
    "properties": {"shelveOffload": {}},
    "required": ["shelveOffload"],
    "additionalProperties": False,
}

unshelve = {
    "type": "object",
    "properties": {"unshelve": {}},
    "required": ["unshelve"],
    "additionalProperties": False,
}
