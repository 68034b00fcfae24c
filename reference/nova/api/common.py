"""What the server sub-resources share (``nova/api/openstack/common.py``).

A sub-resource of a server (its tags, metadata, security groups, volume
attachments) first finds the server, as the caller may see it (another project's
is a 404, ``common.get_instance``), then checks the rule against the server's
project: the order upstream's controllers keep.
"""

from __future__ import annotations

from flask import g

from novalab.reference.nova import policy


def get_authorized_instance(compute_api, server_id: str, rule: str) -> dict:
    """The server ``server_id``, once ``rule`` allows the caller on its project."""
    instance = compute_api.get(g.context, server_id)
    policy.authorize(g.context, rule, {"project_id": instance["project_id"]})
    return instance
