"""The bodies of the power, lock and console-output actions, at microversion 2.1.

As upstream (``schemas/servers.py``, ``lock_server.py``, ``pause_server.py``,
``suspend_server.py``, ``console_output.py``): most bodies are one key whose value
is not checked (clients send ``null``); ``reboot`` needs a ``type``, SOFT or HARD
in any of three spellings; ``os-getConsoleOutput`` takes an optional ``length``,
an integer (or a string of one) from -1 (everything) up. ``lock``'s
``locked_reason`` is 2.73, above novalab's maximum.
"""

from __future__ import annotations


def _bare(name: str) -> dict:
    return {"type": "object", "properties": {name: {}}, "required": [name],
            "additionalProperties": False}


stop = _bare("os-stop")
start = _bare("os-start")
pause = _bare("pause")
unpause = _bare("unpause")
suspend = _bare("suspend")
resume = _bare("resume")
lock = _bare("lock")
unlock = _bare("unlock")

reboot = {
    "type": "object",
    "properties": {
        "reboot": {
            "type": "object",
            "properties": {
                "type": {"type": "string",
                         "enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"]},
            },
            "required": ["type"],
            "additionalProperties": False,
        },
    },
    "required": ["reboot"],
    "additionalProperties": False,
}

get_console_output = {
    "type": "object",
    "properties": {
        "os-getConsoleOutput": {
            "type": "object",
            "properties": {
                "length": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$",
                           "minimum": -1},
            },
            "additionalProperties": False,
        },
    },
    "required": ["os-getConsoleOutput"],
    "additionalProperties": False,
}
