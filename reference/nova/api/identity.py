"""``nova/api/openstack/identity.py``: is this a project id?

Upstream asks keystone (``GET /v3/projects/{id}``) and answers 400 only when
keystone says there is no such project. novalab checks the id's form instead
(docs/decisions.md): a longer or odder id could never name a keystone project,
and would not fit the columns that store it (quotas, ``flavor_projects``).
"""

from __future__ import annotations

import re

from novalab.reference.common import exception

_PROJECT_ID = re.compile(r"^[0-9a-zA-Z_-]{1,64}$")


def verify_project_id(project_id: str) -> str:
    """``project_id``, or a 400 "Project ID ... is not a valid project."."""
    if not _PROJECT_ID.match(project_id):
        raise exception.ValidationError(
            detail=f"Project ID {project_id[:80]!r} is not a valid project.")
    return project_id
