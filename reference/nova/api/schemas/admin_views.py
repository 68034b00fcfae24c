"""Query strings and bodies of the admin views (``schemas/hypervisors.py``,
``services.py``, ``availability_zone.py``, ``simple_tenant_usage.py``), per microversion.

Query strings are lists of values (``?host=a&host=b``). Below 2.53 (hypervisors)
and 2.75 (the rest) unknown parameters are let through, as upstream keeps them
for backward compatibility; ``single_param`` allows one value only.
"""

from __future__ import annotations

import copy

from novalab.reference.nova.api.schemas import parameter_types
from novalab.reference.nova.api.schemas.keypairs import _NON_NEGATIVE, multi_params


def single_param(schema: dict) -> dict:
    return {"type": "array", "items": schema, "minItems": 1, "maxItems": 1}


# parameter_types.fqdn: a host name (no spaces, 1-255 characters).
fqdn = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[a-zA-Z0-9._-]+$"}
_ANY = {"type": "object", "properties": {}, "additionalProperties": True}
_PAGING = {"limit": multi_params(_NON_NEGATIVE), "marker": multi_params({"type": "string"})}

# Hypervisors.
hypervisors_index_query = _ANY
hypervisors_index_query_v233 = {"type": "object", "properties": dict(_PAGING),
                                "additionalProperties": True}
hypervisors_index_query_v253 = {
    "type": "object",
    "properties": {"limit": single_param(_NON_NEGATIVE),
                   "marker": single_param({"type": "string"}),
                   "hypervisor_hostname_pattern": single_param(fqdn),
                   "with_servers": single_param(parameter_types.boolean)},
    "additionalProperties": False}
hypervisors_show_query_v253 = {
    "type": "object",
    "properties": {"with_servers": single_param(parameter_types.boolean)},
    "additionalProperties": False}
HYPERVISORS_INDEX_QUERY = (("2.1", hypervisors_index_query),
                           ("2.33", hypervisors_index_query_v233),
                           ("2.53", hypervisors_index_query_v253))
HYPERVISORS_SHOW_QUERY = (("2.1", _ANY), ("2.53", hypervisors_show_query_v253))

# Services.
_COMMON_QUERY = multi_params({"type": "string"})
services_index_query = {"type": "object",
                        "properties": {"host": _COMMON_QUERY, "binary": _COMMON_QUERY},
                        "additionalProperties": True}
services_index_query_v275 = dict(copy.deepcopy(services_index_query),
                                 additionalProperties=False)
SERVICES_INDEX_QUERY = (("2.1", services_index_query), ("2.75", services_index_query_v275))
_REASON = {"type": "string", "minLength": 1, "maxLength": 255}
services_update = {
    "type": "object",
    "properties": {"host": fqdn, "binary": {"type": "string", "minLength": 1,
                                            "maxLength": 255},
                   "disabled_reason": _REASON},
    "required": ["host", "binary"],
    "additionalProperties": False}
services_update_v211 = copy.deepcopy(services_update)
services_update_v211["properties"]["forced_down"] = parameter_types.boolean
# 2.53: the service is on the path; status and/or forced_down in the body.
services_update_v253 = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["enabled", "disabled"]},
                   "disabled_reason": _REASON,
                   "forced_down": parameter_types.boolean},
    "additionalProperties": False}
SERVICES_UPDATE = (("2.1", services_update), ("2.11", services_update_v211),
                   ("2.53", services_update_v253))

# Availability zones: nothing is read from the query string.
AVAILABILITY_ZONE_QUERY = (("2.1", _ANY),)

# Simple tenant usage.
_TIMES = {"start": multi_params({"type": "string"}), "end": multi_params({"type": "string"})}
usage_show_query = {"type": "object", "properties": dict(_TIMES), "additionalProperties": True}
usage_index_query = {"type": "object",
                     "properties": dict(_TIMES, detailed=multi_params({"type": "string"})),
                     "additionalProperties": True}
usage_show_query_v240 = copy.deepcopy(usage_show_query)
usage_show_query_v240["properties"].update(_PAGING)
usage_index_query_v240 = copy.deepcopy(usage_index_query)
usage_index_query_v240["properties"].update(_PAGING)
USAGE_INDEX_QUERY = (("2.1", usage_index_query), ("2.40", usage_index_query_v240),
                     ("2.75", dict(copy.deepcopy(usage_index_query_v240),
                                   additionalProperties=False)))
USAGE_SHOW_QUERY = (("2.1", usage_show_query), ("2.40", usage_show_query_v240),
                    ("2.75", dict(copy.deepcopy(usage_show_query_v240),
                                  additionalProperties=False)))
