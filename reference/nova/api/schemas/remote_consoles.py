"""The bodies of the console URL requests (``schemas/remote_consoles.py``).

Below 2.6 one action per protocol (``os-getVNCConsole`` and its siblings); from 2.6
``POST /servers/{id}/remote-consoles`` with a protocol and a type, 2.8 adding
VMware's ``mks``/``webmks``. Upstream keeps the old type values (``xvpvnc``,
``rdp``) in the enums and refuses them lower down; so does novalab.
"""

from __future__ import annotations

import copy


def _console_action(name: str, types: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {
            name: {
                "type": "object",
                "properties": {"type": {"type": "string", "enum": types}},
                "required": ["type"],
                "additionalProperties": False,
            },
        },
        "required": [name],
        "additionalProperties": False,
    }


get_vnc_console = _console_action("os-getVNCConsole", ["novnc", "xvpvnc"])
get_spice_console = _console_action("os-getSPICEConsole", ["spice-html5"])
get_serial_console = _console_action("os-getSerialConsole", ["serial"])

create_v26 = {
    "type": "object",
    "properties": {
        "remote_console": {
            "type": "object",
            "properties": {
                "protocol": {"type": "string", "enum": ["vnc", "spice", "serial", "rdp"]},
                "type": {"type": "string",
                         "enum": ["novnc", "xvpvnc", "spice-html5", "serial", "rdp-html5"]},
            },
            "required": ["protocol", "type"],
            "additionalProperties": False,
        },
    },
    "required": ["remote_console"],
    "additionalProperties": False,
}

create_v28 = copy.deepcopy(create_v26)
create_v28["properties"]["remote_console"]["properties"]["protocol"]["enum"].append("mks")
create_v28["properties"]["remote_console"]["properties"]["type"]["enum"].append("webmks")

CREATE = (("2.6", create_v26), ("2.8", create_v28))
