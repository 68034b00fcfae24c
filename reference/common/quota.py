"""Quotas by counting, as Nova has done since Pike and Cinder and Neutron do too.

A project's *limit* for a resource is the row in the service's quota table for
that project and resource, else the service's default (``-1``: unlimited). Its
*usage* is counted from the service's own tables when a request arrives (no
reservations, no usage cache that a crash could leave wrong). A request asking
for ``deltas`` more is refused before any work when ``usage + delta > limit``.

Counting has one race: two requests checked at the same moment may both pass.
Nova answers it with a *recheck* after the rows are written
(``CONF.quota.recheck_quota``): :meth:`QuotaEngine.recheck` does the same, and
the caller deletes what it just created if the recheck fails.

Each service keeps its own table (``quotas`` for Nova, ``cinder_quotas``,
``neutron_quotas``) through a model that mixes in :class:`QuotaLimitColumns`,
and answers over quota with its own exception and status (Nova 403, Cinder 413,
Neutron 409), passed in as ``error``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from sqlalchemy import DateTime, Integer, String, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from novalab.reference.common import exception
from novalab.reference.common.db import Database, utcnow

UNLIMITED = -1
MAX_LIMIT = 2**31 - 1


class OverQuota(exception.NovaLabException):
    """Nova's wording (``nova/exception.py`` ``TooManyInstances`` and friends)."""

    msg_fmt = ("Quota exceeded for %(overs)s: Requested %(req)s, but already used "
               "%(used)s of %(allowed)s %(overs)s")
    code = 403


class QuotaLimitColumns:
    """The columns of a per-project limit row (``quotas`` in Nova and Cinder)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    resource: Mapped[str] = mapped_column(String(255))
    hard_limit: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)


Counter = Callable[[str], int] | Callable[[str], tuple[int, ...]]


class QuotaEngine:
    """Limits, usages and the check before work, for one service's resources.

    ``defaults`` names every resource the service has a limit for; ``counters``
    maps a resource name to a function of the project id returning its usage, or a
    tuple of names to one function returning all their usages in that order (one
    query for what one table holds: instances, cores and RAM). A resource with no
    counter is shown with 0 in use (one the service keeps a limit for but does not
    have, such as Cinder's snapshots).
    """

    def __init__(self, db: Database, model, defaults: Mapping[str, int],
                 counters: Mapping[str | tuple[str, ...], Counter],
                 error: type[exception.NovaLabException] = OverQuota):
        self.db = db
        self.model = model
        self.defaults = dict(defaults)
        self.counters = {(key,) if isinstance(key, str) else tuple(key): counter
                         for key, counter in counters.items()}
        self.error = error

    def limits(self, project_id: str) -> dict[str, int]:
        """The project's limit for every resource (its own rows over the defaults)."""
        limits = dict(self.defaults)
        with self.db.session() as session:
            rows = session.scalars(select(self.model).where(
                self.model.project_id == project_id)).all()
            for row in rows:
                if row.resource in limits:
                    limits[row.resource] = row.hard_limit
        return limits

    def usages(self, project_id: str, resources=None) -> dict[str, int]:
        """Usage of ``resources`` (default: every resource), each counter run once."""
        wanted = set(resources) if resources else set(self.defaults)
        used = dict.fromkeys(wanted, 0)
        for names, counter in self.counters.items():
            if wanted & set(names):
                counted = counter(project_id)
                values = (counted,) if len(names) == 1 else counted
                used.update((n, v) for n, v in zip(names, values, strict=True) if n in wanted)
        return used

    def set_limits(self, project_id: str, values: Mapping[str, int]) -> dict[str, int]:
        """Store the project's limits (``openstack quota set``); returns all its limits."""
        unknown = set(values) - set(self.defaults)
        if unknown:
            raise exception.Invalid(f"Unknown quota resources {sorted(unknown)}.")
        with self.db.session() as session:
            for resource, limit in values.items():
                if limit < UNLIMITED or limit > MAX_LIMIT:
                    raise exception.Invalid(
                        f"Quota limit {limit} for {resource} must be -1 or between 0 "
                        f"and {MAX_LIMIT}.")
                row = session.scalars(select(self.model).where(
                    self.model.project_id == project_id,
                    self.model.resource == resource)).first()
                if row is None:
                    session.add(self.model(project_id=project_id, resource=resource,
                                           hard_limit=limit))
                else:
                    row.hard_limit = limit
        return self.limits(project_id)

    def delete_limits(self, project_id: str) -> None:
        """Back to the defaults (``openstack quota delete``)."""
        with self.db.session() as session:
            session.execute(delete(self.model).where(self.model.project_id == project_id))

    def check_deltas(self, project_id: str, deltas: Mapping[str, int]) -> None:
        """Raise ``error`` if adding ``deltas`` to today's usage passes a limit."""
        self._check(project_id, deltas, already_counted=False)

    def recheck(self, project_id: str, deltas: Mapping[str, int]) -> None:
        """After the rows are written: usage (which now includes them) within limits."""
        self._check(project_id, deltas, already_counted=True)

    def _check(self, project_id: str, deltas: Mapping[str, int], already_counted: bool) -> None:
        wanted = {name: delta for name, delta in deltas.items() if delta > 0}
        if not wanted:
            return
        limits = self.limits(project_id)
        used = self.usages(project_id, wanted)
        overs = [name for name, delta in wanted.items()
                 if limits[name] != UNLIMITED
                 and used[name] + (0 if already_counted else delta) > limits[name]]
        if overs:
            first = overs[0]
            raise self.error(overs=", ".join(overs), req=wanted[first],
                             used=used[first] - (wanted[first] if already_counted else 0),
                             allowed=limits[first], resource=first)
