"""Cinder's quotas (``cinder/quota.py``): volumes and gigabytes per project, by counting.

A project's limits are its rows in ``cinder_quotas`` over the defaults below
(upstream's ``quota_volumes``, ``quota_gigabytes``, ...); its usage is counted
from its live volumes when a request arrives. ``volume/api.py`` checks a create
before the volume row is written and rechecks after (the race of two creates
checked at once), and answers over quota with Cinder's 413s.

Snapshots count too (``snapshots``, and their volumes' sizes in ``gigabytes``, as
upstream without ``no_snapshot_gb_quota``). Backups and groups do not exist
here: their limits are kept and shown (so ``openstack quota show`` reads as
upstream) and their usage is 0.
``per_volume_gigabytes`` bounds one volume's size (-1: no bound).
"""

from __future__ import annotations

from novalab.reference.cinder.db import api as db_api
from novalab.reference.cinder.db.models import Quota
from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.common.quota import QuotaEngine

# cinder.conf [DEFAULT] quota_* defaults.
DEFAULTS = {
    "volumes": 10,
    "gigabytes": 1000,
    "snapshots": 10,
    "backups": 10,
    "backup_gigabytes": 1000,
    "groups": 10,
    "per_volume_gigabytes": -1,
}
COUNTED = ("volumes", "gigabytes", "snapshots")


class VolumeSizeExceedsAvailableQuota(exception.NovaLabException):
    msg_fmt = ("Requested volume or snapshot exceeds allowed %(name)s quota. Requested "
               "%(requested)sG, quota is %(quota)sG and %(consumed)sG has been consumed.")
    code = 413


class VolumeLimitExceeded(exception.NovaLabException):
    msg_fmt = "Maximum number of volumes allowed (%(allowed)d) exceeded for quota '%(name)s'."
    code = 413


class SnapshotLimitExceeded(exception.NovaLabException):
    msg_fmt = "Maximum number of snapshots allowed (%(allowed)d) exceeded"
    code = 413


class VolumeSizeExceedsLimit(exception.NovaLabException):
    msg_fmt = "Requested volume size %(size)dG is larger than maximum allowed limit %(limit)dG."
    code = 413


def over_quota(*, overs: str, req: int, used: int, allowed: int, resource: str,
               **_) -> exception.NovaLabException:
    """Cinder's exception for the first resource over its limit (``process_reserve_over_quota``)."""
    if resource == "gigabytes":
        return VolumeSizeExceedsAvailableQuota(name=resource, requested=req, quota=allowed,
                                               consumed=used)
    if resource == "snapshots":
        return SnapshotLimitExceeded(allowed=allowed)
    return VolumeLimitExceeded(allowed=allowed, name=resource)


def engine(db: Database) -> QuotaEngine:
    """The quota engine of one cinder-api."""

    def count(project_id: str) -> tuple[int, int, int]:
        volumes, volume_gb = db_api.volume_data_get_for_project(db, project_id)
        snapshots, snapshot_gb = db_api.snapshot_data_get_for_project(db, project_id)
        return volumes, volume_gb + snapshot_gb, snapshots

    counters = {("volumes", "gigabytes", "snapshots"): count}
    return QuotaEngine(db, Quota, DEFAULTS, counters, error=over_quota)


def check_volume_size(quotas: QuotaEngine, project_id: str, size: int) -> None:
    """413 if one volume of ``size`` GiB passes the project's ``per_volume_gigabytes``."""
    limit = quotas.limits(project_id)["per_volume_gigabytes"]
    if limit != -1 and size > limit:
        raise VolumeSizeExceedsLimit(size=size, limit=limit)
