"""Resource providers and their inventories (``placement/objects/resource_provider.py``,
``inventory.py``, ``usage.py``).

The generation is the point: every change to a provider's inventory (or, in
``allocation.py``, to its allocations) ends with
:meth:`ResourceProviders.increment_generation`, an ``UPDATE ... SET generation =
g + 1 WHERE id = ? AND generation = g`` for the ``g`` the writer read. If another
writer got there first no row matches, the whole transaction rolls back and the
caller hears ``ConcurrentUpdateDetected`` (a 409): read again, decide again.
A provider's name and parent are not guarded by it: upstream does not bump the
generation on ``PUT /resource_providers/{uuid}`` either.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from novalab.reference.common.db import Database
from novalab.reference.placement import exception
from novalab.reference.placement.db import models
from novalab.reference.placement.objects import resource_class
from novalab.tracing.spans import upstream

PATH = "placement/objects/resource_provider.py"
MAX_INT = 2**31 - 1


@dataclass
class ResourceProvider:
    id: int
    uuid: str
    name: str
    generation: int
    root_provider_uuid: str
    parent_provider_uuid: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class Inventory:
    resource_class: str
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0
    updated_at: datetime | None = field(default=None, compare=False)

    FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")

    @property
    def capacity(self) -> int:
        """What may be allocated in all: ``(total - reserved) * allocation_ratio``."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def fits(self, amount: int, used: int) -> bool:
        """Whether one more allocation of ``amount`` may be made, ``used`` being taken:
        within ``min_unit``..``max_unit``, a multiple of ``step_size``, and no more
        than the capacity left."""
        return (self.min_unit <= amount <= self.max_unit and amount % self.step_size == 0
                and used + amount <= self.capacity)

    def values(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_row(cls, row: models.Inventory) -> Inventory:
        return cls(row.resource_class, row.total, row.reserved, row.min_unit, row.max_unit,
                   row.step_size, row.allocation_ratio,
                   updated_at=row.updated_at or row.created_at)


def provider_query():
    """Providers with their root's and parent's uuids (one SELECT, as upstream's)."""
    rp = aliased(models.ResourceProvider, name="rp")
    root = aliased(models.ResourceProvider, name="root_rp")
    parent = aliased(models.ResourceProvider, name="parent_rp")
    query = select(rp, root.uuid, parent.uuid) \
        .join(root, rp.root_provider_id == root.id) \
        .outerjoin(parent, rp.parent_provider_id == parent.id).order_by(rp.id)
    return query, rp


def provider_from_row(row) -> ResourceProvider:
    rp, root_uuid, parent_uuid = row
    return ResourceProvider(rp.id, rp.uuid, rp.name, rp.generation, root_uuid, parent_uuid,
                            rp.created_at, rp.updated_at)


def usage_by_provider(session: Session, provider_ids) -> dict[tuple[int, str], int]:
    """``{(provider id, class): used}``: the sum of the allocations against each."""
    a = models.Allocation
    rows = session.execute(
        select(a.resource_provider_id, a.resource_class, func.sum(a.used))
        .where(a.resource_provider_id.in_(list(provider_ids)))
        .group_by(a.resource_provider_id, a.resource_class))
    return {(rp_id, rc): int(used or 0) for rp_id, rc, used in rows}


def inventories_by_provider(session: Session, provider_ids) -> dict[int, dict[str, Inventory]]:
    rows = session.scalars(select(models.Inventory).where(
        models.Inventory.resource_provider_id.in_(list(provider_ids))))
    found: dict[int, dict[str, Inventory]] = {}
    for row in rows:
        found.setdefault(row.resource_provider_id, {})[row.resource_class] = \
            Inventory.from_row(row)
    return found


class ResourceProviders:
    """The resource provider objects of one placement-api, on its database."""

    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    # Providers ----------------------------------------------------------------------------

    def _get(self, session: Session, uuid: str) -> ResourceProvider:
        query, rp = provider_query()
        row = session.execute(query.where(rp.uuid == uuid)).first()
        if row is None:
            raise exception.ResourceProviderNotFound(uuid=uuid)
        return provider_from_row(row)

    @upstream(PATH, "ResourceProvider.get_by_uuid")
    def get_by_uuid(self, uuid: str) -> ResourceProvider:
        with self.db.session() as session:
            return self._get(session, uuid)

    @upstream(PATH, "get_all_by_filters")
    def get_all_by_filters(self, filters: dict) -> list[ResourceProvider]:
        """Providers matching ``name``, ``uuid``, ``in_tree`` (a provider whose tree to
        list) and ``resources`` (``{class: amount}`` the provider itself can hold)."""
        query, rp = provider_query()
        with self.db.session() as session:
            if filters.get("name"):
                query = query.where(rp.name == filters["name"])
            if filters.get("uuid"):
                query = query.where(rp.uuid == filters["uuid"])
            if filters.get("in_tree"):
                root_id = session.scalar(select(models.ResourceProvider.root_provider_id).where(
                    models.ResourceProvider.uuid == filters["in_tree"]))
                if root_id is None:
                    return []
                query = query.where(rp.root_provider_id == root_id)
            providers = [provider_from_row(row) for row in session.execute(query)]
            resources = filters.get("resources")
            if resources and providers:
                ids = [p.id for p in providers]
                inventories = inventories_by_provider(session, ids)
                usage = usage_by_provider(session, ids)
                providers = [p for p in providers if all(
                    rc in inventories.get(p.id, {}) and
                    inventories[p.id][rc].fits(amount, usage.get((p.id, rc), 0))
                    for rc, amount in resources.items())]
            return providers

    @upstream(PATH, "ResourceProvider.create")
    def create(self, name: str, uuid: str, parent_provider_uuid: str | None = None
               ) -> ResourceProvider:
        try:
            with self.db.session() as session:
                root_id = parent_id = None
                if parent_provider_uuid is not None:
                    if parent_provider_uuid == uuid:
                        raise exception.ObjectActionError(
                            action="create",
                            reason="parent provider UUID cannot be same as UUID. Please set "
                                   "parent provider UUID to None if there is no parent.")
                    parent = session.scalar(select(models.ResourceProvider).where(
                        models.ResourceProvider.uuid == parent_provider_uuid))
                    if parent is None:
                        raise exception.ObjectActionError(
                            action="create", reason="parent provider UUID does not exist.")
                    parent_id, root_id = parent.id, parent.root_provider_id
                self._check_unique(session, name=name, uuid=uuid)
                row = models.ResourceProvider(uuid=uuid, name=name, generation=0,
                                              parent_provider_id=parent_id)
                session.add(row)
                session.flush()
                row.root_provider_id = root_id or row.id   # a root is its own root
                session.flush()
                return self._get(session, uuid)
        except IntegrityError as exc:   # a racing create took the name or uuid
            raise exception.DuplicateProvider(duplicate=f"name: {name}") from exc

    @staticmethod
    def _check_unique(session: Session, name: str, uuid: str | None = None,
                      other_than: int | None = None) -> None:
        rp = models.ResourceProvider
        duplicates = []
        if uuid is not None and session.scalar(select(rp.id).where(rp.uuid == uuid)):
            duplicates.append(f"uuid: {uuid}")
        taken = session.scalar(select(rp.id).where(rp.name == name))
        if taken is not None and taken != other_than:
            duplicates.append(f"name: {name}")
        if duplicates:
            raise exception.DuplicateProvider(duplicate=", ".join(duplicates))

    _UNCHANGED = object()

    @upstream(PATH, "ResourceProvider.save")
    def save(self, provider: ResourceProvider, name: str,
             parent_provider_uuid=_UNCHANGED) -> ResourceProvider:
        """Rename, and give a parent to a provider that has none (re-parenting and
        un-parenting came with 1.37, beyond the range served here)."""
        with self.db.session() as session:
            self._check_unique(session, name=name, other_than=provider.id)
            values = {"name": name}
            if parent_provider_uuid is not self._UNCHANGED and \
                    parent_provider_uuid != provider.parent_provider_uuid:
                if parent_provider_uuid is None or provider.parent_provider_uuid is not None:
                    reason = "un-parenting" if parent_provider_uuid is None else "re-parenting"
                    raise exception.ObjectActionError(
                        action="update", reason=f"{reason} a provider is not currently allowed.")
                parent = session.scalar(select(models.ResourceProvider).where(
                    models.ResourceProvider.uuid == parent_provider_uuid))
                if parent is None:
                    raise exception.ObjectActionError(
                        action="create", reason="parent provider UUID does not exist.")
                if parent.root_provider_id == provider.id:
                    raise exception.ObjectActionError(
                        action="update",
                        reason="creating loop in the provider tree is not allowed.")
                values.update(parent_provider_id=parent.id,
                              root_provider_id=parent.root_provider_id)
                # The provider's subtree moves into the parent's tree with it.
                session.execute(update(models.ResourceProvider)
                                .where(models.ResourceProvider.root_provider_id == provider.id)
                                .values(root_provider_id=parent.root_provider_id))
            session.execute(update(models.ResourceProvider)
                            .where(models.ResourceProvider.id == provider.id).values(**values))
            return self._get(session, provider.uuid)

    @upstream(PATH, "ResourceProvider.destroy")
    def destroy(self, provider: ResourceProvider) -> None:
        rp = models.ResourceProvider
        with self.db.session() as session:
            if session.scalar(select(rp.id).where(rp.parent_provider_id == provider.id).limit(1)):
                raise exception.CannotDeleteParentResourceProvider()
            if session.scalar(select(models.Allocation.id).where(
                    models.Allocation.resource_provider_id == provider.id).limit(1)):
                raise exception.ResourceProviderInUse()
            session.execute(delete(models.Inventory).where(
                models.Inventory.resource_provider_id == provider.id))
            session.execute(update(rp).where(rp.id == provider.id).values(root_provider_id=None))
            if not session.execute(delete(rp).where(rp.id == provider.id)).rowcount:
                raise exception.ResourceProviderNotFound(uuid=provider.uuid)

    @upstream(PATH, "ResourceProvider.increment_generation")
    def increment_generation(self, session: Session, provider: ResourceProvider) -> None:
        """Bump the generation the caller read, or fail: someone else wrote first."""
        rp = models.ResourceProvider
        result = session.execute(update(rp).where(
            rp.id == provider.id, rp.generation == provider.generation).values(
            generation=provider.generation + 1))
        if result.rowcount != 1:
            raise exception.ResourceProviderConcurrentUpdateDetected()
        provider.generation += 1

    # Inventories --------------------------------------------------------------------------

    @upstream("placement/objects/inventory.py", "get_all_by_resource_provider")
    def get_inventories(self, provider: ResourceProvider) -> dict[str, Inventory]:
        with self.db.session() as session:
            return inventories_by_provider(session, [provider.id]).get(provider.id, {})

    def _write_inventory(self, provider: ResourceProvider, add=(), change=(), remove=(),
                         missing_ok: bool = True) -> None:
        """Add, change and remove inventories in one transaction, then bump the
        generation. Removing a class that has allocations is ``InventoryInUse``."""
        try:
            self._write_inventory_rows(provider, add, change, remove, missing_ok)
        except IntegrityError as exc:   # a racing writer added the same class first
            raise exception.ConcurrentUpdateDetected() from exc

    def _write_inventory_rows(self, provider, add, change, remove, missing_ok) -> None:
        inv = models.Inventory
        with self.db.session() as session:
            for inventory in [*add, *change]:
                resource_class.ensure(inventory.resource_class)
            if remove:
                in_use = sorted(session.scalars(select(models.Allocation.resource_class).where(
                    models.Allocation.resource_provider_id == provider.id,
                    models.Allocation.resource_class.in_(remove)).distinct()))
                if in_use:
                    raise exception.InventoryInUse(resource_classes=", ".join(in_use),
                                                   resource_provider=provider.uuid)
                deleted = session.execute(delete(inv).where(
                    inv.resource_provider_id == provider.id, inv.resource_class.in_(remove)))
                if not missing_ok and not deleted.rowcount:
                    raise exception.InventoryNotFound(resource_class=", ".join(remove))
            for inventory in add:
                session.add(inv(resource_provider_id=provider.id,
                                resource_class=inventory.resource_class, **inventory.values()))
            for inventory in change:
                # Upstream allows a capacity below what is already allocated (it logs it).
                changed = session.execute(update(inv).where(
                    inv.resource_provider_id == provider.id,
                    inv.resource_class == inventory.resource_class).values(**inventory.values()))
                if not changed.rowcount:
                    raise exception.InventoryNotFound(resource_class=inventory.resource_class)
            session.flush()
            self.increment_generation(session, provider)

    @upstream(PATH, "ResourceProvider.set_inventory")
    def set_inventory(self, provider: ResourceProvider, inventories: list[Inventory]) -> None:
        """Make the provider's inventory exactly ``inventories``."""
        existing = set(self.get_inventories(provider))
        wanted = {i.resource_class: i for i in inventories}
        self._write_inventory(provider,
                              add=[i for rc, i in wanted.items() if rc not in existing],
                              change=[i for rc, i in wanted.items() if rc in existing],
                              remove=sorted(existing - set(wanted)))

    @upstream(PATH, "ResourceProvider.add_inventory")
    def add_inventory(self, provider: ResourceProvider, inventory: Inventory) -> None:
        self._write_inventory(provider, add=[inventory])

    @upstream(PATH, "ResourceProvider.update_inventory")
    def update_inventory(self, provider: ResourceProvider, inventory: Inventory) -> None:
        self._write_inventory(provider, change=[inventory])

    @upstream(PATH, "ResourceProvider.delete_inventory")
    def delete_inventory(self, provider: ResourceProvider, resource_class_name: str) -> None:
        self._write_inventory(provider, remove=[resource_class_name], missing_ok=False)

    # Usages -------------------------------------------------------------------------------

    @upstream("placement/objects/usage.py", "get_all_by_resource_provider_uuid")
    def get_usages(self, provider: ResourceProvider) -> dict[str, int]:
        """``{class: used}`` for every class the provider has inventory of."""
        with self.db.session() as session:
            inventories = inventories_by_provider(session, [provider.id]).get(provider.id, {})
            usage = usage_by_provider(session, [provider.id])
        return {rc: usage.get((provider.id, rc), 0) for rc in inventories}


def new_uuid(value: str | None) -> str:
    """The dashed form of a given uuid (``UUID`` normalises one without dashes), or a new one."""
    return str(uuidlib.UUID(value)) if value else str(uuidlib.uuid4())
