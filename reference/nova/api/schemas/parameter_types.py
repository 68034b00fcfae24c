"""Schema pieces the compute API's schemas share (``nova/api/validation/parameter_types.py``).

The generic ones (names, UUIDs, integers) come from the common block; these are
Nova's own spellings: its booleans and positive integers also accept their
string forms, as the 2.1 API always has.
"""

from __future__ import annotations

from novalab.reference.common.validation import parameter_types as common

MAX_INT = 2**31 - 1

name = common.name()

uuid = {"type": "string", "format": "uuid",
        "pattern": r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"}

# parameter_types.boolean: JSON booleans and the strings oslo's bool_from_string takes.
_TRUE = ["True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes"]
_FALSE = ["False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no"]
boolean = {"type": ["boolean", "string"], "enum": [True, *_TRUE, False, *_FALSE]}
TRUE_STRINGS = frozenset(s.lower() for s in _TRUE)


def is_true(value) -> bool:
    """What a value ``boolean`` accepted means."""
    return value is True or str(value).lower() in TRUE_STRINGS


# parameter_types.positive_integer: an integer, or its digits as a string (never "0").
positive_integer = {"type": ["integer", "string"], "pattern": "^[1-9][0-9]{0,9}$",
                    "minimum": 1, "maximum": MAX_INT}

# A quota limit: -1 (unlimited) up to the database's integer.
quota_limit = {"type": ["integer", "string"], "pattern": "^-?[0-9]{1,10}$",
               "minimum": -1, "maximum": MAX_INT}

# parameter_types.metadata: keys of the characters Nova allows, values bounded.
# Its size is the metadata_items quota's business (128 by default; 1024 here bounds it).
metadata = {"type": "object", "maxProperties": 1024,
            "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$":
                                  {"type": "string", "maxLength": 255,
                                   "pattern": r"^[^\x00]*$"}},
            "additionalProperties": False}

ip_address = {"type": "string", "format": "ip-address", "maxLength": 45}

# common_query_regex_param, bounded: the name filter (see ../name_filter.py).
query_regex = {"type": "string", "maxLength": 255}
non_negative_integer_string = {"type": "string", "pattern": "^[0-9]{1,10}$"}
