"""Nova's quotas (``nova/quota.py``): instances, cores and RAM, counted per project.

Since Pike Nova counts usage from the instances themselves (no reservations,
no usage table): ``instances`` is the project's live instances, ``cores`` and
``ram`` their flavors' vCPUs and memory. The other limits the 2.1 API reports
(key pairs, metadata items, injected files, server groups) are kept and shown;
``metadata_items`` is enforced by the create schema, at create and by the server
metadata API (the resulting item count).
"""

from __future__ import annotations

from sqlalchemy import func, select

from novalab.reference.common.db import Database
from novalab.reference.common.quota import QuotaEngine
from novalab.reference.nova.db.models import Instance, Quota

DEFAULTS = {
    "instances": 10, "cores": 20, "ram": 51200, "key_pairs": 100, "metadata_items": 128,
    "injected_files": 5, "injected_file_content_bytes": 10240,
    "injected_file_path_bytes": 255, "server_groups": 10, "server_group_members": 10,
}
# What creating one instance of a flavor adds, by resource.
COUNTED = ("instances", "cores", "ram")


def _usage(db: Database, project_id: str) -> tuple[int, int, int]:
    with db.session() as session:
        count, cores, ram = session.execute(
            select(func.count(Instance.id), func.coalesce(func.sum(Instance.vcpus), 0),
                   func.coalesce(func.sum(Instance.memory_mb), 0))
            .where(Instance.project_id == project_id, Instance.deleted == 0)).one()
    return int(count), int(cores), int(ram)


def compute_quotas(db: Database) -> QuotaEngine:
    """The engine nova-api checks creates with and ``os-quota-sets`` reads and writes."""
    return QuotaEngine(db, Quota, DEFAULTS, {COUNTED: lambda project: _usage(db, project)})


def deltas_for(flavor: dict, count: int) -> dict[str, int]:
    return {"instances": count, "cores": count * int(flavor["vcpus"]),
            "ram": count * int(flavor["memory_mb"])}


def allowed_count(engine: QuotaEngine, project_id: str, flavor: dict, min_count: int,
                  max_count: int) -> int:
    """How many of ``max_count`` instances fit (``check_num_instances_quota``).

    As many as every counted resource allows, at most ``max_count``; fewer than
    ``min_count`` raises ``OverQuota`` for the first resource that cannot fit.
    """
    limits = engine.limits(project_id)
    used = engine.usages(project_id, COUNTED)
    per_instance = deltas_for(flavor, 1)
    fits = max_count
    for name in COUNTED:
        if limits[name] < 0 or per_instance[name] == 0:
            continue
        fits = min(fits, max(0, (limits[name] - used[name]) // per_instance[name]))
    if fits < min_count:
        engine.check_deltas(project_id, deltas_for(flavor, min_count))  # raises, worded
        raise engine.error(overs="instances", req=min_count, used=used["instances"],
                           allowed=limits["instances"])
    return fits
