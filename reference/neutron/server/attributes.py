"""Each resource's attributes, declared once, as neutron-lib's ``RESOURCE_ATTRIBUTE_MAP``.

Upstream every resource is a map of attribute name to what may be done with it:
``allow_post`` / ``allow_put`` (may a client set it on create / update),
``validate`` (what a value must look like), ``default``, ``is_visible`` and
``enforce_policy`` (setting it needs its own policy rule). The API layer
(``neutron/api/v2/base.py``) reads the map to refuse unknown attributes and
attributes not allowed for the method, to validate values and to check the
per-attribute policy, before the plugin sees the body.

Here ``validate`` is a JSON Schema fragment, so the same declaration gives the
schema the API checks bodies against (:func:`to_json_schema`, which the fuzz
test draws bodies from) and the per-attribute policy (:func:`enforce`).
Written by hand: neutron-lib would bring oslo.config, oslo.db and its own
validators into a project that checks everything else with jsonschema.
"""

from __future__ import annotations

from dataclasses import dataclass

from novalab.reference.common.context import RequestContext
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.server import policy

NAME = {"type": "string", "maxLength": 255, "pattern": r"^[^\x00]*$"}
DESCRIPTION = {"type": "string", "maxLength": 255, "pattern": r"^[^\x00]*$"}
UUID = {"type": "string", "format": "uuid"}
PROJECT = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[^\x00]*$"}
BOOLEAN = {"type": "boolean"}
IP = {"type": "string", "format": "ip-address", "maxLength": 45}
DEVICE = {"type": "string", "maxLength": 255, "pattern": r"^[^\x00]*$"}
PORT = {"type": ["integer", "string", "null"], "minimum": 0, "maximum": 65535,
        "pattern": "^[0-9]{1,5}$"}

# Who may set an attribute that enforces a policy of its own.
ADMIN = "admin"
ADMIN_OR_SERVICE = "admin_or_service"


@dataclass(frozen=True)
class Attribute:
    validate: dict
    allow_post: bool = True
    allow_put: bool = False
    required: bool = False  # on POST (upstream: allow_post with no default)
    enforce_policy: str | None = None


RESOURCE_ATTRIBUTE_MAP: dict[str, dict[str, Attribute]] = {
    "network": {
        "name": Attribute(NAME, allow_put=True),
        "description": Attribute(DESCRIPTION, allow_put=True),
        "admin_state_up": Attribute(BOOLEAN, allow_put=True),
        "shared": Attribute(BOOLEAN, allow_put=True, enforce_policy=ADMIN),
        "mtu": Attribute({"type": "integer", "minimum": 68, "maximum": 9216}),
        "project_id": Attribute(PROJECT),
        "tenant_id": Attribute(PROJECT),
        "provider:network_type": Attribute({"type": "string", "enum": ["flat"]},
                                           enforce_policy=ADMIN),
        "provider:physical_network": Attribute({"type": "string", "maxLength": 64},
                                               enforce_policy=ADMIN),
        "provider:segmentation_id": Attribute({"type": ["integer", "null"], "minimum": 1,
                                               "maximum": 4094}, enforce_policy=ADMIN),
    },
    "subnet": {
        "network_id": Attribute(UUID, required=True),
        "cidr": Attribute({"type": "string", "format": "cidr", "maxLength": 49},
                          required=True),
        "ip_version": Attribute({"type": "integer", "enum": [4]}),
        "name": Attribute(NAME, allow_put=True),
        "description": Attribute(DESCRIPTION, allow_put=True),
        "gateway_ip": Attribute({"type": ["string", "null"], "format": "ip-address",
                                 "maxLength": 45}),
        "enable_dhcp": Attribute(BOOLEAN, allow_put=True),
        "allocation_pools": Attribute({"type": "array", "maxItems": 16, "items": {
            "type": "object", "properties": {"start": IP, "end": IP},
            "required": ["start", "end"], "additionalProperties": False}}),
        "dns_nameservers": Attribute({"type": "array", "maxItems": 5, "items": IP},
                                     allow_put=True),
        "host_routes": Attribute({"type": "array", "maxItems": 20, "items": {
            "type": "object",
            "properties": {"destination": {"type": "string", "format": "cidr",
                                           "maxLength": 49}, "nexthop": IP},
            "required": ["destination", "nexthop"], "additionalProperties": False}}),
        "project_id": Attribute(PROJECT),
        "tenant_id": Attribute(PROJECT),
    },
    "port": {
        "network_id": Attribute(UUID, required=True),
        "name": Attribute(NAME, allow_put=True),
        "description": Attribute(DESCRIPTION, allow_put=True),
        "admin_state_up": Attribute(BOOLEAN, allow_put=True),
        "mac_address": Attribute({"type": "string", "format": "mac-address"},
                                 enforce_policy=None),
        "fixed_ips": Attribute({"type": "array", "maxItems": 8, "items": {
            "type": "object", "properties": {"subnet_id": UUID, "ip_address": IP},
            "additionalProperties": False}}),
        "device_id": Attribute(DEVICE, allow_put=True),
        "device_owner": Attribute(DEVICE, allow_put=True),
        "project_id": Attribute(PROJECT),
        "tenant_id": Attribute(PROJECT),
        "binding:host_id": Attribute({"type": "string", "maxLength": 255},
                                     allow_put=True, enforce_policy=ADMIN_OR_SERVICE),
        "binding:profile": Attribute({"type": ["object", "null"], "maxProperties": 16},
                                     allow_put=True, enforce_policy=ADMIN_OR_SERVICE),
        "binding:vnic_type": Attribute({"type": "string", "enum": ["normal"]},
                                       allow_put=True, enforce_policy=ADMIN_OR_SERVICE),
        # The security-group extension's EXTENDED_ATTRIBUTES_2_0 (a uuid_list; null is []).
        "security_groups": Attribute({"type": ["array", "null"], "maxItems": 32,
                                      "uniqueItems": True, "items": UUID}, allow_put=True),
    },
    # neutron/extensions/securitygroup.py and stateful-security-group.
    "security_group": {
        # "default" passes here: the plugin answers it 409, as upstream's validator.
        "name": Attribute(NAME, allow_put=True),
        "description": Attribute(DESCRIPTION, allow_put=True),
        "stateful": Attribute(BOOLEAN, allow_put=True),
        "project_id": Attribute(PROJECT),
        "tenant_id": Attribute(PROJECT),
    },
    "security_group_rule": {
        "security_group_id": Attribute(UUID, required=True),
        "direction": Attribute({"type": "string", "enum": ["ingress", "egress"]},
                               required=True),
        "ethertype": Attribute({"type": "string", "pattern": "^[iI][pP][vV][46]$"}),
        "protocol": Attribute({"type": ["string", "integer", "null"], "maxLength": 40,
                               "minimum": 0, "maximum": 255,
                               "pattern": r"^[a-zA-Z0-9-]+$"}),
        "port_range_min": Attribute(PORT),
        "port_range_max": Attribute(PORT),
        "remote_ip_prefix": Attribute({"type": ["string", "null"], "maxLength": 49,
                                       "anyOf": [{"format": "cidr"},
                                                 {"format": "ip-address"}]}),
        "remote_group_id": Attribute({"type": ["string", "null"], "format": "uuid"}),
        "description": Attribute(DESCRIPTION),
        "project_id": Attribute(PROJECT),
        "tenant_id": Attribute(PROJECT),
    },
}


def to_json_schema(resource: str, method: str) -> dict:
    """The body schema of ``POST`` (create) or ``PUT`` (update) of ``resource``."""
    attributes = RESOURCE_ATTRIBUTE_MAP[resource]
    allowed = {name: a for name, a in attributes.items()
               if (a.allow_post if method == "POST" else a.allow_put)}
    inner = {"type": "object", "properties": {n: a.validate for n, a in allowed.items()},
             "additionalProperties": False}
    if method == "POST":
        inner["required"] = [n for n, a in allowed.items() if a.required]
    else:
        inner["minProperties"] = 1
    return {"type": "object", "properties": {resource: inner}, "required": [resource],
            "additionalProperties": False}


def enforce(context: RequestContext, resource: str, method: str, attrs: dict) -> None:
    """The per-attribute policy (``enforce_policy``): 403 naming the first attribute the
    caller may not set, as ``create_port:binding:host_id`` upstream."""
    action = f"{'create' if method == 'POST' else 'update'}_{resource}"
    for name in attrs:
        rule = RESOURCE_ATTRIBUTE_MAP[resource][name].enforce_policy
        if rule == ADMIN and not policy.is_admin(context) or \
                rule == ADMIN_OR_SERVICE and not policy.is_admin_or_service(context):
            raise n_exc.PolicyNotAuthorized(action=f"{action}:{name}")
