"""Allocations and their consumers (``placement/objects/allocation.py``, ``consumer.py``).

A write replaces *all* the allocations of each consumer it names, in one
transaction (``_set_allocations``):

1. each consumer is found or created; from 1.28 the caller must say which
   consumer generation it read (``null``: "I expect no allocations yet"), and a
   different one is a ``ConsumerGenerationConflict`` (409);
2. the consumer's old allocations are deleted and the new ones checked against
   every inventory: the class must be there, the amount within ``min_unit``,
   ``max_unit`` and ``step_size``, and the total used within
   ``(total - reserved) * allocation_ratio`` (unless the write makes an
   overcommitted provider less so);
3. the rows are written, then each provider's generation and each consumer's
   generation is bumped against the value read in step 1 or 2; a consumer
   left with no allocations is deleted.

A provider generation that moved meanwhile rolls everything back and
``replace_all`` retries from the start (up to ten times, upstream's
``allocation_conflict_retry_count``); a consumer generation that moved is the
caller's to resolve (409).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from novalab.reference.common.db import Database
from novalab.reference.placement import exception
from novalab.reference.placement.db import models
from novalab.reference.placement.objects import resource_class
from novalab.reference.placement.objects.resource_provider import (
    ResourceProvider,
    ResourceProviders,
    inventories_by_provider,
    usage_by_provider,
)
from novalab.tracing.spans import upstream

PATH = "placement/objects/allocation.py"
CONFLICT_RETRIES = 10
# [placement] incomplete_consumer_project_id / _user_id: who owns allocations written
# before 1.8, when a body named no project or user.
INCOMPLETE_CONSUMER_ID = "00000000-0000-0000-0000-000000000000"


class ConsumerGenerationConflict(exception.ConcurrentUpdateDetected):
    msg_fmt = "consumer generation conflict - expected %(expected)s but got %(got)s"


@dataclass
class Consumer:
    id: int
    uuid: str
    project_id: str
    user_id: str
    generation: int


@dataclass
class ConsumerAllocations:
    """What one consumer should hold after a write: ``{provider uuid: {class: used}}``
    (empty: nothing), and the consumer generation the caller read (checked from 1.28)."""

    consumer_uuid: str
    project_id: str
    user_id: str
    allocations: dict[str, dict[str, int]] = field(default_factory=dict)
    generation: int | None = None
    check_generation: bool = False


@dataclass
class Allocation:
    provider: ResourceProvider
    consumer: Consumer
    resource_class: str
    used: int


def _consumer(row: models.Consumer) -> Consumer:
    return Consumer(row.id, row.uuid, row.project_id, row.user_id, row.generation)


class Allocations:
    """The allocation objects of one placement-api, on its database."""

    def __init__(self, db: Database, providers: ResourceProviders, tracer):
        self.db = db
        self.providers = providers
        self.tracer = tracer

    # Reads --------------------------------------------------------------------------------

    def _rows(self, session: Session, where) -> list[Allocation]:
        a, c, rp = models.Allocation, models.Consumer, models.ResourceProvider
        rows = session.execute(select(a, c, rp).join(c, a.consumer_id == c.uuid)
                               .join(rp, a.resource_provider_id == rp.id)
                               .where(where).order_by(a.id))
        providers: dict[int, ResourceProvider] = {}
        found = []
        for allocation, consumer, provider in rows:
            if provider.id not in providers:
                providers[provider.id] = ResourceProvider(   # its tree is not needed here
                    provider.id, provider.uuid, provider.name, provider.generation, "")
            found.append(Allocation(providers[provider.id], _consumer(consumer),
                                    allocation.resource_class, allocation.used))
        return found

    @upstream(PATH, "get_all_by_consumer_id")
    def get_all_by_consumer_id(self, consumer_uuid: str) -> list[Allocation]:
        with self.db.session() as session:
            return self._rows(session, models.Allocation.consumer_id == consumer_uuid)

    @upstream(PATH, "get_all_by_resource_provider")
    def get_all_by_resource_provider(self, provider: ResourceProvider) -> list[Allocation]:
        with self.db.session() as session:
            return self._rows(session, models.Allocation.resource_provider_id == provider.id)

    @upstream("placement/objects/usage.py", "get_all_by_project_user")
    def get_usages_by_project_user(self, project_id: str, user_id: str | None = None
                                   ) -> dict[str, int]:
        """``{class: used}`` over every consumer of the project (and user)."""
        a, c = models.Allocation, models.Consumer
        query = select(a.resource_class, a.used).join(c, a.consumer_id == c.uuid) \
            .where(c.project_id == project_id)
        if user_id:
            query = query.where(c.user_id == user_id)
        usages: dict[str, int] = {}
        with self.db.session() as session:
            for rc, used in session.execute(query):
                usages[rc] = usages.get(rc, 0) + used
        return usages

    # Writes -------------------------------------------------------------------------------

    @upstream(PATH, "replace_all")
    def replace_all(self, wanted: list[ConsumerAllocations]) -> None:
        """Make each consumer's allocations what ``wanted`` says, atomically."""
        for _attempt in range(CONFLICT_RETRIES):
            try:
                return self._set_allocations(wanted)
            except exception.ResourceProviderConcurrentUpdateDetected:
                continue   # a provider moved on meanwhile: read it again and retry
        raise exception.ResourceProviderConcurrentUpdateDetected()

    @upstream(PATH, "_set_allocations")
    def _set_allocations(self, wanted: list[ConsumerAllocations]) -> None:
        try:
            with self.db.session() as session:
                self._write(session, wanted)
        except IntegrityError as exc:   # a racing writer created the same consumer
            raise exception.ConcurrentUpdateDetected() from exc

    def _write(self, session: Session, wanted: list[ConsumerAllocations]) -> None:
        consumers = {w.consumer_uuid: self.ensure_consumer(session, w) for w in wanted}
        providers: dict[str, ResourceProvider] = {}
        for w in wanted:
            for rp_uuid, resources in w.allocations.items():
                if rp_uuid not in providers:
                    providers[rp_uuid] = self.providers._get(session, rp_uuid)
                for rc in resources:
                    resource_class.ensure(rc)
        # Emptying a consumer also writes to the providers it held (upstream writes
        # zero "used" allocations against them), so their generations move too.
        a = models.Allocation
        emptied = [w.consumer_uuid for w in wanted if not w.allocations]
        for rp_id in set(session.scalars(select(a.resource_provider_id)
                                         .where(a.consumer_id.in_(emptied)))):
            uuid = session.scalar(select(models.ResourceProvider.uuid)
                                  .where(models.ResourceProvider.id == rp_id))
            if uuid not in providers:
                providers[uuid] = self.providers._get(session, uuid)
        ids = [p.id for p in providers.values()]
        prev_usage = usage_by_provider(session, ids)
        session.execute(delete(a).where(a.consumer_id.in_(list(consumers))))
        new = [(w.consumer_uuid, providers[rp_uuid], rc, used)
               for w in wanted for rp_uuid, resources in w.allocations.items()
               for rc, used in resources.items()]
        self._check_capacity_exceeded(session, new, prev_usage)
        for consumer_uuid, provider, rc, used in new:
            session.add(a(resource_provider_id=provider.id, consumer_id=consumer_uuid,
                          resource_class=rc, used=used))
        session.flush()
        for provider in providers.values():
            self.providers.increment_generation(session, provider)
        for consumer in consumers.values():
            self.increment_consumer_generation(session, consumer)
        for w in wanted:
            if not w.allocations:   # nothing left: the consumer goes (upstream likewise)
                session.execute(delete(models.Consumer).where(
                    models.Consumer.uuid == w.consumer_uuid))

    @upstream("placement/handlers/util.py", "ensure_consumer")
    def ensure_consumer(self, session: Session, wanted: ConsumerAllocations) -> Consumer:
        """The consumer, created if new; its generation checked when the caller sent one."""
        row = session.scalar(select(models.Consumer).where(
            models.Consumer.uuid == wanted.consumer_uuid))
        if row is None:
            if wanted.check_generation and wanted.generation is not None:
                raise ConsumerGenerationConflict(expected="null", got=wanted.generation)
            row = models.Consumer(uuid=wanted.consumer_uuid, project_id=wanted.project_id,
                                  user_id=wanted.user_id, generation=0)
            session.add(row)
            session.flush()
            return _consumer(row)
        if wanted.check_generation and row.generation != wanted.generation:
            raise ConsumerGenerationConflict(expected=row.generation, got=wanted.generation)
        if (row.project_id, row.user_id) != (wanted.project_id, wanted.user_id):
            # The body names another owner: the consumer is updated to it, as upstream.
            session.execute(update(models.Consumer).where(models.Consumer.id == row.id).values(
                project_id=wanted.project_id, user_id=wanted.user_id))
        return Consumer(row.id, row.uuid, wanted.project_id, wanted.user_id, row.generation)

    @upstream(PATH, "_check_capacity_exceeded")
    def _check_capacity_exceeded(self, session: Session, new: list, prev_usage: dict) -> None:
        """Refuse any allocation its provider's inventory cannot hold."""
        ids = {provider.id for _, provider, _, _ in new}
        inventories = inventories_by_provider(session, ids)
        usage = usage_by_provider(session, ids)   # without these consumers' old allocations
        wanted: dict[tuple[int, str], int] = {}
        for _, provider, rc, used in new:
            wanted[provider.id, rc] = wanted.get((provider.id, rc), 0) + used
        for _, provider, rc, used in new:
            inventory = inventories.get(provider.id, {}).get(rc)
            where = {"resource_class": rc, "resource_provider": provider.uuid}
            if inventory is None:
                raise exception.InvalidInventory(**where)
            if not (inventory.min_unit <= used <= inventory.max_unit and
                    used % inventory.step_size == 0):
                raise exception.InvalidAllocationConstraintsViolated(**where)
            after = usage.get((provider.id, rc), 0) + wanted[provider.id, rc]
            before = prev_usage.get((provider.id, rc))
            if after > inventory.capacity and (before is None or after > before):
                raise exception.InvalidAllocationCapacityExceeded(**where)

    @upstream("placement/objects/consumer.py", "Consumer.increment_generation")
    def increment_consumer_generation(self, session: Session, consumer: Consumer) -> None:
        c = models.Consumer
        result = session.execute(update(c).where(
            c.id == consumer.id, c.generation == consumer.generation).values(
            generation=consumer.generation + 1))
        if result.rowcount != 1:
            raise exception.ConcurrentUpdateDetected()
        consumer.generation += 1

    @upstream(PATH, "delete_all")
    def delete_all(self, consumer_uuid: str) -> int:
        """Delete the consumer's allocations and the consumer; how many there were.

        Unsafe against a concurrent writer, as upstream warns: no generation is
        checked (``PUT`` with empty allocations and a consumer generation is safe)."""
        with self.db.session() as session:
            deleted = session.execute(delete(models.Allocation).where(
                models.Allocation.consumer_id == consumer_uuid)).rowcount
            session.execute(delete(models.Consumer).where(models.Consumer.uuid == consumer_uuid))
            return deleted
