"""Neutron v2.0 response bodies novalab returns, from the Networking API reference
(https://docs.openstack.org/api-ref/network/v2/), as JSON schemas with additional
properties forbidden: networks, subnets, ports, security groups and their rules, one
and listed.

Each lists the attributes the reference gives the resource and the extensions a
DevStack Neutron has loaded; ``required`` holds what novalab must always send.
"""

from __future__ import annotations

_string_or_null = {"type": ["string", "null"]}
_tags = {"type": "array", "items": {"type": "string"}}
_common = {"id": {"type": "string"}, "name": {"type": "string"},
           "tenant_id": {"type": "string"}, "project_id": {"type": "string"},
           "description": {"type": "string"}, "tags": _tags,
           "created_at": {"type": "string"}, "updated_at": {"type": "string"},
           "revision_number": {"type": "integer"}}

network = {
    "type": "object",
    "properties": {**_common,
                   "admin_state_up": {"type": "boolean"}, "status": {"type": "string"},
                   "shared": {"type": "boolean"}, "subnets": {"type": "array",
                                                              "items": {"type": "string"}},
                   "mtu": {"type": "integer"}, "router:external": {"type": "boolean"},
                   "availability_zone_hints": {"type": "array"},
                   "availability_zones": {"type": "array"},
                   "ipv4_address_scope": _string_or_null,
                   "ipv6_address_scope": _string_or_null,
                   "port_security_enabled": {"type": "boolean"},
                   "provider:network_type": _string_or_null,
                   "provider:physical_network": _string_or_null,
                   "provider:segmentation_id": {"type": ["integer", "null"]},
                   "is_default": {"type": "boolean"}, "dns_domain": {"type": "string"},
                   "l2_adjacency": {"type": "boolean"}, "qos_policy_id": _string_or_null},
    "required": ["id", "name", "admin_state_up", "status", "shared", "subnets",
                 "tenant_id"],
    "additionalProperties": False,
}

_pool = {"type": "object", "properties": {"start": {"type": "string"},
                                          "end": {"type": "string"}},
         "required": ["start", "end"], "additionalProperties": False}
subnet = {
    "type": "object",
    "properties": {**_common,
                   "network_id": {"type": "string"}, "ip_version": {"enum": [4, 6]},
                   "cidr": {"type": "string"}, "gateway_ip": _string_or_null,
                   "enable_dhcp": {"type": "boolean"},
                   "allocation_pools": {"type": "array", "items": _pool},
                   "dns_nameservers": {"type": "array", "items": {"type": "string"}},
                   "host_routes": {"type": "array"},
                   "ipv6_address_mode": _string_or_null, "ipv6_ra_mode": _string_or_null,
                   "subnetpool_id": _string_or_null, "segment_id": _string_or_null,
                   "service_types": {"type": "array"}, "dns_publish_fixed_ip": {
                       "type": "boolean"}},
    "required": ["id", "network_id", "ip_version", "cidr", "gateway_ip", "enable_dhcp",
                 "allocation_pools", "tenant_id"],
    "additionalProperties": False,
}

_fixed_ip = {"type": "object", "properties": {"subnet_id": {"type": "string"},
                                              "ip_address": {"type": "string"}},
             "required": ["subnet_id", "ip_address"], "additionalProperties": False}
port = {
    "type": "object",
    "properties": {**_common,
                   "network_id": {"type": "string"}, "admin_state_up": {"type": "boolean"},
                   "mac_address": {"type": "string"}, "fixed_ips": {
                       "type": "array", "items": _fixed_ip},
                   "device_id": {"type": "string"}, "device_owner": {"type": "string"},
                   "status": {"type": "string"},
                   "binding:host_id": {"type": "string"},
                   "binding:vif_type": {"type": "string"},
                   "binding:vif_details": {"type": "object"},
                   "binding:vnic_type": {"type": "string"},
                   "binding:profile": {"type": "object"},
                   "security_groups": {"type": "array", "items": {"type": "string"}},
                   "port_security_enabled": {"type": "boolean"},
                   "allowed_address_pairs": {"type": "array"},
                   "extra_dhcp_opts": {"type": "array"},
                   "dns_name": {"type": "string"}, "dns_assignment": {"type": "array"},
                   "qos_policy_id": _string_or_null, "propagate_uplink_status": {
                       "type": "boolean"}},
    "required": ["id", "network_id", "admin_state_up", "mac_address", "fixed_ips",
                 "device_id", "device_owner", "status", "tenant_id"],
    "additionalProperties": False,
}

# Security groups and rules (the security-group and stateful-security-group
# extensions). Left out as novalab does not back them: ``shared`` (RBAC), ``tags``,
# ``remote_address_group_id`` (address groups).
_standard = {"tenant_id": {"type": "string"}, "project_id": {"type": "string"},
             "description": {"type": "string"}, "created_at": {"type": "string"},
             "updated_at": {"type": "string"}, "revision_number": {"type": "integer"}}
_int_or_null = {"type": ["integer", "null"]}
security_group_rule = {
    "type": "object",
    "properties": {**_standard,
                   "id": {"type": "string"}, "security_group_id": {"type": "string"},
                   "direction": {"enum": ["ingress", "egress"]},
                   "ethertype": {"enum": ["IPv4", "IPv6"]},
                   "protocol": _string_or_null, "port_range_min": _int_or_null,
                   "port_range_max": _int_or_null, "remote_ip_prefix": _string_or_null,
                   "normalized_cidr": _string_or_null, "remote_group_id": _string_or_null,
                   "belongs_to_default_sg": {"type": ["boolean", "null"]}},
    "required": ["id", "security_group_id", "direction", "ethertype", "protocol",
                 "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id",
                 "tenant_id", "project_id"],
    "additionalProperties": False,
}
security_group = {
    "type": "object",
    "properties": {**_standard,
                   "id": {"type": "string"}, "name": {"type": "string"},
                   "stateful": {"type": "boolean"},
                   "security_group_rules": {"type": "array", "items": security_group_rule}},
    "required": ["id", "name", "description", "tenant_id", "project_id", "stateful",
                 "security_group_rules"],
    "additionalProperties": False,
}


def one(name: str, schema: dict) -> dict:
    return {"type": "object", "properties": {name: schema}, "required": [name],
            "additionalProperties": False}


def many(name: str, schema: dict) -> dict:
    return {"type": "object", "properties": {name: {"type": "array", "items": schema}},
            "required": [name], "additionalProperties": False}
