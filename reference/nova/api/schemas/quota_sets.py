"""``PUT /os-quota-sets/{project_id}`` (``schemas/quota_sets.py``), at microversion 2.1.

The compute resources only: the network ones (``floating_ips``, ``fixed_ips``,
``security_groups``, ``security_group_rules``, ``networks``) are Neutron's here,
as they are upstream since 2.36.
"""

from __future__ import annotations

from novalab.reference.nova.api.schemas import parameter_types as types

RESOURCES = ("instances", "cores", "ram", "key_pairs", "metadata_items", "injected_files",
             "injected_file_content_bytes", "injected_file_path_bytes", "server_groups",
             "server_group_members")

update = {
    "type": "object",
    "properties": {"quota_set": {
        "type": "object",
        "properties": {**{name: types.quota_limit for name in RESOURCES},
                       "force": types.boolean},
        "additionalProperties": False,
    }},
    "required": ["quota_set"],
    "additionalProperties": False,
}
