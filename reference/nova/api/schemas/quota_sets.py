"""``PUT /os-quota-sets/{project_id}`` (``schemas/quota_sets.py``), by microversion.

The compute resources only: the network ones (``floating_ips``, ``fixed_ips``,
``security_groups``, ``security_group_rules``, ``networks``) are Neutron's here,
as they are upstream since 2.36 (below it upstream stored them and enforced
nothing; novalab refuses them rather than store a limit nothing reads). From 2.57
the injected-file quotas are gone too (``update_v257``).
"""

from __future__ import annotations

import copy

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

update_v257 = copy.deepcopy(update)
for _name in ("injected_files", "injected_file_content_bytes", "injected_file_path_bytes"):
    del update_v257["properties"]["quota_set"]["properties"][_name]

UPDATE = (("2.1", update), ("2.57", update_v257))
