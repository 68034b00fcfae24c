"""The queries behind Nova's services (``nova/db/main/api.py``), returning plain dicts.

Only nova-api, nova-scheduler and nova-conductor call these: nova-compute never
touches the database, it asks the conductor over RPC.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable
from datetime import datetime

from opentelemetry import trace
from sqlalchemy import DateTime, and_, delete, func, or_, select, update
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova.db.models import (
    BlockDeviceMapping,
    ComputeNode,
    Flavor,
    FlavorExtraSpecs,
    FlavorProjects,
    Instance,
    InstanceAction,
    InstanceActionEvent,
    InstanceFault,
    InstanceInfoCache,
    Service,
    Tag,
    utcnow,
)
from novalab.tracing import attributes as attr

_UNSET = object()


def _coerce_times(model, values: dict) -> dict:
    """Datetimes cross RPC as ISO strings (JSON has no time type): turn them back."""
    for key, value in values.items():
        column = model.__table__.columns.get(key)
        if isinstance(value, str) and column is not None and \
                isinstance(column.type, DateTime):
            values[key] = datetime.fromisoformat(value.rstrip("Z"))
    return values


def to_dict(row) -> dict:
    values = {c.key: getattr(row, c.key) for c in row.__mapper__.column_attrs}
    if isinstance(row, Instance):
        values["metadata"] = values.pop("metadata_items") or {}
        values["system_metadata"] = values["system_metadata"] or {}
        values["name"] = row.name
        # Tags only when the caller asked for them (``expected_attrs``), as upstream's
        # Instance object loads them only on demand: reading them on every save cost
        # one more SELECT per read in every service (docs/perf/boot-profile.md).
        if "tags" not in sa_inspect(row).unloaded:
            values["tags"] = [t.tag for t in row.tags]
    elif isinstance(row, Flavor):
        values["extra_specs"] = {spec.key: spec.value for spec in row.extra_specs}
    elif isinstance(row, Service):
        values["uuid"] = service_uuid(row.id, row.host, row.binary)
    return values


def service_uuid(service_id: int, host: str, binary: str) -> str:
    """The service's uuid (2.53's ``id``): upstream keeps a random one in a column;
    novalab derives it from the row, which never changes (docs/decisions.md)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL,
                             f"novalab:service:{service_id}:{host}:{binary}"))


# Instances ----------------------------------------------------------------------------

def instance_create(db: Database, values: dict) -> dict:
    values = dict(values)
    if "metadata" in values:
        values["metadata_items"] = values.pop("metadata")
    tags = values.pop("tags", None) or []
    with db.session() as session:
        row = Instance(**values)
        session.add(row)
        session.add_all([Tag(resource_id=row.uuid, tag=tag) for tag in tags])
        session.flush()
        session.refresh(row)
        return to_dict(row)


def _instance_query(uuid: str, read_deleted: str = "no", expected_attrs: Iterable[str] = ()):
    query = _with_expected(select(Instance).where(Instance.uuid == uuid), expected_attrs)
    if read_deleted == "no":
        query = query.where(Instance.deleted == 0)
    return query


# What the API reads beside each instance it shows (upstream's servers controller asks
# for more: the rest lives in the row here).
API_EXPECTED_ATTRS = ("tags",)


def _with_expected(query, expected_attrs: Iterable[str]):
    """Load what the caller expects beside the row (upstream's ``expected_attrs``:
    here only ``tags``, which the API shows from 2.26 and nothing else reads)."""
    if "tags" in expected_attrs:
        query = query.options(selectinload(Instance.tags))
    return query


def instance_get_by_uuid(db: Database, uuid: str, read_deleted: str = "no",
                         expected_attrs: Iterable[str] = ()) -> dict:
    with db.session() as session:
        row = session.scalars(_instance_query(uuid, read_deleted, expected_attrs)).first()
        if row is None:
            raise exception.InstanceNotFound(instance_id=uuid)
        return to_dict(row)


def instance_get_all(db: Database, *, project_id: str | None = None, limit: int | None = None,
                     marker: str | None = None, name_match=None,
                     host: str | None = None, match=None,
                     expected_attrs: Iterable[str] = ()) -> list[dict]:
    """Live instances, newest first, optionally one project's (``None`` means all).

    ``name_match`` is a predicate on the display name (``api/name_filter.py``: a
    pattern matched without backtracking, never a raw ``re`` a client wrote);
    ``match`` one on the whole instance (``api/search_opts.py``: the list filters).
    """
    query = _with_expected(select(Instance).where(Instance.deleted == 0), expected_attrs)
    if project_id is not None:
        query = query.where(Instance.project_id == project_id)
    if host is not None:
        query = query.where(Instance.host == host)
    query = query.order_by(Instance.created_at.desc(), Instance.id.desc())
    with db.session() as session:
        rows = list(session.scalars(query))
    if name_match is not None:
        rows = [r for r in rows if name_match(r.display_name or "")]
    instances = [to_dict(r) for r in rows]
    if match is not None:
        instances = [i for i in instances if match(i)]
    if marker is not None:
        ids = [i["uuid"] for i in instances]
        if marker not in ids:
            raise exception.Invalid(f"marker [{marker}] not found")
        instances = instances[ids.index(marker) + 1:]
    if limit is not None:
        instances = instances[:limit]
    return instances


def instance_update(db: Database, uuid: str, values: dict,
                    expected_task_state=_UNSET, expected_attrs: Iterable[str] = ()) -> dict:
    """Update an instance; with ``expected_task_state``, only if it still holds.

    The check is a compare-and-swap in the UPDATE's WHERE clause, as Nova does,
    so two services racing on one instance cannot both win. The UPDATE comes
    first; the row is read once, after it, to return it (or to tell "gone" from
    "someone else changed the task state" when nothing matched).
    """
    values = dict(values)
    if "metadata" in values:
        values["metadata_items"] = values.pop("metadata")
    values["updated_at"] = utcnow()
    _coerce_times(Instance, values)
    where = [Instance.uuid == uuid, Instance.deleted == 0]
    if expected_task_state is not _UNSET:
        expected = expected_task_state
        if not isinstance(expected, (list, tuple, set)):
            expected = [expected]
        states = [s for s in expected if s is not None]
        clauses = [Instance.task_state.in_(states)] if states else []
        if None in expected:
            clauses.append(Instance.task_state.is_(None))
        where.append(or_(*clauses))
    with db.session() as session:
        result = session.execute(
            update(Instance).where(and_(*where)).values(**values)
            .execution_options(synchronize_session=False))
        row = session.scalars(_instance_query(uuid, expected_attrs=expected_attrs)).first()
        if row is None:
            raise exception.InstanceNotFound(instance_id=uuid)
        if result.rowcount == 0:
            raise exception.UnexpectedTaskStateError(
                instance_uuid=uuid, expected=expected_task_state, actual=row.task_state)
        _record_save(values, expected_task_state)
        return to_dict(row)


# The state machine's fields, as the event records them (None as "None", the way
# `openstack server show` prints a task state that is no task).
_STATES = (("vm_state", attr.NOVA_VM_STATE), ("task_state", attr.NOVA_TASK_STATE),
           ("power_state", attr.NOVA_POWER_STATE))


def _record_save(values: dict, expected_task_state) -> None:
    """The event ``Instance.save`` on the current span when the save changed the state
    machine: the states it wrote and the task state(s) it expected (upstream's
    ``instance.save(expected_task_state=...)``), so a trace shows each transition."""
    span = trace.get_current_span()
    saved = {name: ("None" if values[key] is None else values[key])
             for key, name in _STATES if key in values}
    if not span.is_recording() or not saved:
        return
    if expected_task_state is not _UNSET:
        expected = expected_task_state
        if not isinstance(expected, (list, tuple, set)):
            expected = [expected]
        saved[attr.NOVA_EXPECTED_TASK_STATE] = ["None" if s is None else str(s)
                                                for s in expected]
    span.add_event("Instance.save", saved)


def instance_destroy(db: Database, uuid: str) -> dict:
    """Soft-delete: the row stays, with ``deleted`` set to its id."""
    with db.session() as session:
        row = session.scalars(_instance_query(uuid)).first()
        if row is None:
            raise exception.InstanceNotFound(instance_id=uuid)
        now = utcnow()
        row.deleted = row.id
        row.deleted_at = now
        row.terminated_at = row.terminated_at or now
        row.vm_state = "deleted"
        row.task_state = None
        row.power_state = 0  # power_state.NOSTATE: the guest is gone
        return to_dict(row)


def host_usage(db: Database) -> dict[str, dict]:
    """What live instances consume on each host: the scheduler's view of used resources."""
    query = (select(Instance.host, func.count(Instance.id), func.sum(Instance.memory_mb),
                    func.sum(Instance.vcpus), func.sum(Instance.root_gb + Instance.ephemeral_gb))
             .where(Instance.deleted == 0, Instance.host.is_not(None))
             .group_by(Instance.host))
    with db.session() as session:
        return {host: {"instances": n, "memory_mb": int(ram or 0), "vcpus": int(cpu or 0),
                       "disk_gb": int(disk or 0)}
                for host, n, ram, cpu, disk in session.execute(query)}


# Faults ---------------------------------------------------------------------------------

def instance_fault_create(db: Database, values: dict) -> dict:
    values = _coerce_times(InstanceFault, dict(values))
    values["message"] = (values.get("message") or "")[:255]
    with db.session() as session:
        row = InstanceFault(**values)
        session.add(row)
        session.flush()
        return to_dict(row)


def instance_fault_get_by_instance_uuids(db: Database, uuids: Iterable[str]) -> dict[str, dict]:
    """The latest fault of each instance that has one."""
    uuids = list(uuids)
    if not uuids:
        return {}
    query = (select(InstanceFault).where(InstanceFault.instance_uuid.in_(uuids))
             .order_by(InstanceFault.created_at, InstanceFault.id))
    with db.session() as session:
        return {row.instance_uuid: to_dict(row) for row in session.scalars(query)}


# Flavors --------------------------------------------------------------------------------

def _flavor_query(context=None):
    """``Flavor._flavor_get_query_from_db``: an admin (and the services' own lookups,
    with no context) sees every flavor; anyone else the public ones and the private
    ones their project was given (``flavor_projects``)."""
    query = select(Flavor)
    if context is not None and not context.is_admin:
        query = query.where(or_(Flavor.is_public.is_(True), Flavor.projects.any(
            FlavorProjects.project_id == context.project_id)))
    return query


def _flavor_taken(db: Database, values: dict) -> None:
    """The 409 for a flavor id or a name another flavor has (``FlavorIdExists`` first)."""
    with db.session() as session:
        if session.scalars(select(Flavor.id).where(
                Flavor.flavorid == str(values["flavorid"]))).first() is not None:
            raise nova_exception.FlavorIdExists(flavor_id=values["flavorid"])
        if session.scalars(select(Flavor.id).where(
                Flavor.name == values["name"])).first() is not None:
            raise nova_exception.FlavorExists(name=values["name"])


def flavor_create(db: Database, values: dict) -> dict:
    """``_flavor_create``: a name or a flavor id already taken is a 409 (upstream
    tells the two apart by the unique constraint the insert broke; a create racing
    this one for the same name breaks it here too)."""
    values = dict(values)
    extra_specs = values.pop("extra_specs", None) or {}
    _flavor_taken(db, values)
    try:
        with db.session() as session:
            row = Flavor(**values)
            session.add(row)
            session.flush()
            session.add_all([FlavorExtraSpecs(flavor_id=row.id, key=key, value=value)
                             for key, value in extra_specs.items()])
            session.flush()
            session.refresh(row)
            return to_dict(row)
    except IntegrityError:
        _flavor_taken(db, values)
        raise


def flavor_get_all(db: Database, context=None, *, is_public: bool | None = None,
                   disabled: bool | None = None, min_memory_mb: int | None = None,
                   min_root_gb: int | None = None, sort_key: str = "flavorid",
                   sort_dir: str = "asc", limit: int | None = None,
                   marker: str | None = None) -> list[dict]:
    """``_flavor_get_all_from_db``: the flavors ``context`` may see, filtered.

    ``is_public=True`` means the public ones and those shared with the caller's
    project; ``False`` only the private ones; ``None`` all of them. Sorted by
    ``sort_key`` then the row id; ``marker`` (a flavor id) starts the page after it.
    """
    query = _flavor_query(context)
    if min_memory_mb is not None:
        query = query.where(Flavor.memory_mb >= min_memory_mb)
    if min_root_gb is not None:
        query = query.where(Flavor.root_gb >= min_root_gb)
    if disabled is not None:
        query = query.where(Flavor.disabled.is_(disabled))
    if is_public is not None:
        the_filter = Flavor.is_public.is_(is_public)
        if is_public and context is not None and context.project_id is not None:
            the_filter = or_(the_filter, Flavor.projects.any(
                FlavorProjects.project_id == context.project_id))
        query = query.where(the_filter)
    column = getattr(Flavor, sort_key)
    order = (column.desc(), Flavor.id.desc()) if sort_dir == "desc" else (column, Flavor.id)
    with db.session() as session:
        rows = [to_dict(r) for r in session.scalars(query.order_by(*order))]
        if marker is not None:
            if session.scalars(_flavor_query(context).where(
                    Flavor.flavorid == marker)).first() is None:
                raise nova_exception.MarkerNotFound(marker=marker)
    if marker is not None:
        ids = [r["flavorid"] for r in rows]
        rows = rows[ids.index(marker) + 1:] if marker in ids else []
    return rows[:limit] if limit is not None else rows


def flavor_get_by_flavor_id(db: Database, flavorid: str, context=None) -> dict:
    """One flavor, by the id users know it by; one ``context`` may not see is not found."""
    with db.session() as session:
        row = session.scalars(_flavor_query(context).where(
            Flavor.flavorid == str(flavorid)).order_by(Flavor.id)).first()
        if row is None:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        return to_dict(row)


def _flavor_row(session, flavorid: str) -> Flavor:
    row = session.scalars(select(Flavor).where(Flavor.flavorid == str(flavorid))).first()
    if row is None:
        raise exception.FlavorNotFound(flavor_id=flavorid)
    return row


def _flavor_row_exists(db: Database, flavorid: str) -> None:
    with db.session() as session:
        _flavor_row(session, flavorid)


def flavor_update(db: Database, flavorid: str, values: dict) -> dict:
    """``Flavor._save``: only the description is mutable (``MUTABLE_FIELDS``)."""
    with db.session() as session:
        row = _flavor_row(session, flavorid)
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        session.refresh(row)
        return to_dict(row)


def flavor_destroy(db: Database, flavorid: str) -> dict:
    """``_flavor_destroy``: the flavor, its access rows and extra specs go for good
    (the API database hard-deletes). Instances keep the copy they embedded at boot."""
    with db.session() as session:
        row = _flavor_row(session, flavorid)
        flavor = to_dict(row)
        session.execute(delete(FlavorProjects).where(FlavorProjects.flavor_id == row.id))
        session.execute(delete(FlavorExtraSpecs).where(FlavorExtraSpecs.flavor_id == row.id))
        session.delete(row)
        return flavor


def flavor_extra_specs_update_or_create(db: Database, flavorid: str, specs: dict,
                                        max_retries: int = 10) -> dict:
    """``_flavor_extra_specs_add``: keys the flavor has get the new value, others are
    added. A write racing this one for a new key breaks the unique constraint: try
    again (it is then an update), ``max_retries`` times at most, then a 409.
    Returns the flavor as it now is."""
    for _attempt in range(max_retries):
        try:
            with db.session() as session:
                row = _flavor_row(session, flavorid)
                existing = {spec.key: spec for spec in session.scalars(
                    select(FlavorExtraSpecs).where(FlavorExtraSpecs.flavor_id == row.id,
                                                   FlavorExtraSpecs.key.in_(list(specs))))}
                for key, value in specs.items():
                    if key in existing:
                        existing[key].value = value
                    else:
                        session.add(FlavorExtraSpecs(flavor_id=row.id, key=key, value=value))
                session.flush()
                session.refresh(row)
                return to_dict(row)
        except IntegrityError:
            continue  # a concurrent write committed first (or the flavor went: 404 next)
    raise nova_exception.FlavorExtraSpecUpdateCreateFailed(id=flavorid, retries=max_retries)


def flavor_extra_specs_delete(db: Database, flavorid: str, key: str) -> None:
    """``_flavor_extra_specs_del``: a key the flavor does not have is a 404."""
    with db.session() as session:
        row = _flavor_row(session, flavorid)
        result = session.execute(delete(FlavorExtraSpecs).where(
            FlavorExtraSpecs.flavor_id == row.id, FlavorExtraSpecs.key == key))
        if result.rowcount == 0:
            raise nova_exception.FlavorExtraSpecsNotFound(extra_specs_key=key,
                                                          flavor_id=flavorid)


def flavor_access_get_by_flavor_id(db: Database, flavorid: str) -> list[str]:
    """``_get_projects_from_db``: the projects a flavor is shared with."""
    with db.session() as session:
        return [p.project_id for p in _flavor_row(session, flavorid).projects]


def flavor_access_add(db: Database, flavorid: str, project_id: str) -> list[str]:
    """``_flavor_add_project``: a project already there is a 409."""
    try:
        with db.session() as session:
            row = _flavor_row(session, flavorid)
            session.add(FlavorProjects(flavor_id=row.id, project_id=project_id))
    except IntegrityError:  # uniq_flavor_projects0flavor_id0project_id
        _flavor_row_exists(db, flavorid)
        raise nova_exception.FlavorAccessExists(flavor_id=flavorid,
                                                project_id=project_id) from None
    return flavor_access_get_by_flavor_id(db, flavorid)


def flavor_access_remove(db: Database, flavorid: str, project_id: str) -> list[str]:
    """``_flavor_del_project``: a project not there is a 404."""
    with db.session() as session:
        row = _flavor_row(session, flavorid)
        result = session.execute(delete(FlavorProjects).where(
            FlavorProjects.flavor_id == row.id, FlavorProjects.project_id == project_id))
        if result.rowcount == 0:
            raise nova_exception.FlavorAccessNotFound(flavor_id=flavorid,
                                                      project_id=project_id)
    return flavor_access_get_by_flavor_id(db, flavorid)


# Compute nodes and services -------------------------------------------------------------

def compute_node_get_all(db: Database) -> list[dict]:
    with db.session() as session:
        query = select(ComputeNode).where(ComputeNode.deleted == 0).order_by(ComputeNode.id)
        return [to_dict(r) for r in session.scalars(query)]


def compute_node_create_or_update(db: Database, values: dict) -> dict:
    """Upsert the node a compute host reports (``ResourceTracker._update``)."""
    values = _coerce_times(ComputeNode, dict(values))
    with db.session() as session:
        row = session.scalars(select(ComputeNode).where(
            ComputeNode.host == values["host"],
            ComputeNode.hypervisor_hostname == values["hypervisor_hostname"],
            ComputeNode.deleted == 0)).first()
        if row is None:
            row = ComputeNode(**values)
            session.add(row)
        else:
            for key, value in values.items():
                setattr(row, key, value)
        session.flush()
        return to_dict(row)


def service_get_all(db: Database, binary: str | None = None) -> list[dict]:
    query = select(Service).where(Service.deleted == 0).order_by(Service.id)
    if binary:
        query = query.where(Service.binary == binary)
    with db.session() as session:
        return [to_dict(r) for r in session.scalars(query)]


def service_create_or_get(db: Database, host: str, binary: str, topic: str) -> dict:
    """The service's row as it starts: created, or found again and seen up now.

    A service that starts again after a long stop (a lab cloud brought back the
    next day) would otherwise look down to the scheduler's ComputeFilter until its
    first heartbeat, ``report_interval`` later, and a boot in that window fails
    with NoValidHost.
    """
    with db.session() as session:
        row = session.scalars(select(Service).where(
            Service.host == host, Service.binary == binary, Service.deleted == 0)).first()
        if row is None:
            row = Service(host=host, binary=binary, topic=topic, last_seen_up=utcnow())
            session.add(row)
        else:
            row.last_seen_up = utcnow()
        session.flush()
        return to_dict(row)


def _live_service(session, service_id: int) -> Service:
    row = session.get(Service, service_id)
    if row is None or row.deleted:
        raise exception.ServiceNotFound(service_id=service_id)
    return row


def service_report(db: Database, service_id: int) -> dict:
    """One heartbeat: bump ``report_count`` and ``last_seen_up`` (servicegroup's DB driver)."""
    with db.session() as session:
        row = _live_service(session, service_id)
        row.report_count += 1
        row.last_seen_up = utcnow()
        return to_dict(row)


def service_get(db: Database, service_id: int | None = None,
                uuid: str | None = None) -> dict:
    """One live service by its id (before 2.53) or uuid (2.53 on)."""
    for service in service_get_all(db):
        if service["id"] == service_id or service["uuid"] == uuid:
            return service
    raise exception.ServiceNotFound(service_id=uuid or service_id)


def service_get_by_host_and_binary(db: Database, host: str, binary: str) -> dict:
    with db.session() as session:
        row = session.scalars(select(Service).where(
            Service.host == host, Service.binary == binary, Service.deleted == 0)).first()
        if row is None:
            raise nova_exception.HostBinaryNotFound(host=host, binary=binary)
        return to_dict(row)


def service_update(db: Database, service_id: int, values: dict) -> dict:
    with db.session() as session:
        row = _live_service(session, service_id)
        for key, value in values.items():
            setattr(row, key, value)
        row.updated_at = utcnow()  # a save, even of the same values (Service.save)
        session.flush()
        return to_dict(row)


def service_destroy(db: Database, service_id: int) -> None:
    """Soft-delete the service and, for a compute service, its nodes (``Service.destroy``)."""
    with db.session() as session:
        row = _live_service(session, service_id)
        now = utcnow()
        row.deleted, row.deleted_at = row.id, now
        if row.binary == "nova-compute":
            session.execute(update(ComputeNode).where(
                ComputeNode.host == row.host, ComputeNode.deleted == 0)
                .values(deleted=ComputeNode.id, deleted_at=now))


def instance_count_by_host(db: Database, host: str) -> int:
    """``InstanceList.get_count_by_hosts``: live instances on ``host``."""
    with db.session() as session:
        return session.scalar(select(func.count(Instance.id)).where(
            Instance.host == host, Instance.deleted == 0))


def instance_get_active_by_window(db: Database, begin: datetime, end: datetime | None = None,
                                  project_id: str | None = None, limit: int | None = None,
                                  marker: str | None = None) -> list[dict]:
    """``instance_get_active_by_window_joined``: instances, deleted ones too, that ran
    at some time in [begin, end): not terminated before ``begin``, launched before
    ``end``; ordered by project and uuid, paged by an instance's uuid."""
    query = select(Instance).where(or_(Instance.terminated_at.is_(None),
                                       Instance.terminated_at > begin))
    if end is not None:
        query = query.where(Instance.launched_at < end)
    if project_id is not None:
        query = query.where(Instance.project_id == project_id)
    with db.session() as session:
        if marker is not None:
            row = session.scalars(select(Instance).where(Instance.uuid == marker)).first()
            if row is None:
                raise nova_exception.MarkerNotFound(marker=marker)
            query = query.where(or_(Instance.project_id > row.project_id,
                                    and_(Instance.project_id == row.project_id,
                                         Instance.uuid > row.uuid)))
        query = query.order_by(Instance.project_id, Instance.uuid)
        if limit is not None:
            query = query.limit(limit)
        return [to_dict(r) for r in session.scalars(query)]


# Block device mappings --------------------------------------------------------------------

def block_device_mapping_create(db: Database, values: dict) -> dict:
    with db.session() as session:
        row = BlockDeviceMapping(**values)
        session.add(row)
        session.flush()
        return to_dict(row)


def block_device_mapping_get_all_by_instance(db: Database, instance_uuid: str) -> list[dict]:
    query = (select(BlockDeviceMapping)
             .where(BlockDeviceMapping.instance_uuid == instance_uuid,
                    BlockDeviceMapping.deleted == 0)
             .order_by(BlockDeviceMapping.id))
    with db.session() as session:
        return [to_dict(r) for r in session.scalars(query)]


def block_device_mapping_get_all_by_instances(db: Database,
                                              uuids: Iterable[str]) -> dict[str, list[dict]]:
    uuids = list(uuids)
    found: dict[str, list[dict]] = {u: [] for u in uuids}
    if not uuids:
        return found
    query = (select(BlockDeviceMapping)
             .where(BlockDeviceMapping.instance_uuid.in_(uuids), BlockDeviceMapping.deleted == 0)
             .order_by(BlockDeviceMapping.id))
    with db.session() as session:
        for row in session.scalars(query):
            found[row.instance_uuid].append(to_dict(row))
    return found


def block_device_mapping_update(db: Database, bdm_id: int, values: dict) -> dict:
    with db.session() as session:
        row = session.get(BlockDeviceMapping, bdm_id)
        if row is None or row.deleted:
            raise exception.NotFound(f"Block device mapping {bdm_id} could not be found.")
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return to_dict(row)


def block_device_mapping_destroy_by_instance(db: Database, instance_uuid: str) -> None:
    with db.session() as session:
        for row in session.scalars(select(BlockDeviceMapping).where(
                BlockDeviceMapping.instance_uuid == instance_uuid,
                BlockDeviceMapping.deleted == 0)):
            row.deleted = row.id
            row.deleted_at = utcnow()


# Network info cache -----------------------------------------------------------------------

def instance_info_cache_update(db: Database, instance_uuid: str, network_info: list) -> dict:
    with db.session() as session:
        row = session.scalars(select(InstanceInfoCache).where(
            InstanceInfoCache.instance_uuid == instance_uuid)).first()
        if row is None:
            row = InstanceInfoCache(instance_uuid=instance_uuid, network_info=network_info)
            session.add(row)
        else:
            row.network_info = network_info
        session.flush()
        return to_dict(row)


def instance_info_cache_get_by_instances(db: Database, uuids: Iterable[str]) -> dict[str, list]:
    uuids = list(uuids)
    if not uuids:
        return {}
    query = select(InstanceInfoCache).where(InstanceInfoCache.instance_uuid.in_(uuids))
    with db.session() as session:
        return {row.instance_uuid: row.network_info or [] for row in session.scalars(query)}


# Instance actions and their events --------------------------------------------------------
#
# An action is one request on one instance, found by (instance_uuid, request_id);
# an event is a step some service took for it, found by its action and its name.

def action_start(db: Database, values: dict) -> dict:
    """Record the start of an action (``compute_api._record_action_start``)."""
    values = _coerce_times(InstanceAction, dict(values))
    with db.session() as session:
        row = InstanceAction(**values)
        session.add(row)
        session.flush()
        return to_dict(row)


def _action_get_by_request_id(session, instance_uuid: str, request_id: str):
    return session.scalars(
        select(InstanceAction)
        .where(InstanceAction.instance_uuid == instance_uuid,
               InstanceAction.request_id == request_id, InstanceAction.deleted == 0)
        .order_by(InstanceAction.created_at.desc(), InstanceAction.id.desc())).first()


def action_get_by_request_id(db: Database, instance_uuid: str, request_id: str) -> dict | None:
    with db.session() as session:
        row = _action_get_by_request_id(session, instance_uuid, request_id)
        return to_dict(row) if row is not None else None


def actions_get(db: Database, instance_uuid: str) -> list[dict]:
    """An instance's actions, newest first."""
    query = (select(InstanceAction)
             .where(InstanceAction.instance_uuid == instance_uuid, InstanceAction.deleted == 0)
             .order_by(InstanceAction.created_at.desc(), InstanceAction.id.desc()))
    with db.session() as session:
        return [to_dict(r) for r in session.scalars(query)]


def _action_for_event(session, values: dict) -> InstanceAction:
    action = _action_get_by_request_id(session, values["instance_uuid"], values["request_id"])
    if action is None:
        raise nova_exception.InstanceActionNotFound(request_id=values["request_id"],
                                                    instance_uuid=values["instance_uuid"])
    return action


def action_event_start(db: Database, values: dict) -> dict:
    """Start an event under the action of ``values["request_id"]`` on the instance."""
    values = _coerce_times(InstanceActionEvent, dict(values))
    with db.session() as session:
        action = _action_for_event(session, values)
        row = InstanceActionEvent(event=values["event"], action_id=action.id,
                                  start_time=values.get("start_time") or utcnow(),
                                  host=values.get("host"))
        session.add(row)
        action.updated_at = row.start_time
        session.flush()
        return to_dict(row)


def action_event_finish(db: Database, values: dict) -> dict:
    """Finish an event with its result; an ``Error`` also marks the action's message."""
    values = _coerce_times(InstanceActionEvent, dict(values))
    with db.session() as session:
        action = _action_for_event(session, values)
        row = session.scalars(
            select(InstanceActionEvent)
            .where(InstanceActionEvent.action_id == action.id,
                   InstanceActionEvent.event == values["event"])
            .order_by(InstanceActionEvent.id.desc())).first()
        if row is None:
            raise nova_exception.InstanceActionEventNotFound(action_id=action.id,
                                                             event=values["event"])
        for key in ("finish_time", "result", "traceback", "details"):
            if key in values:
                setattr(row, key, values[key])
        if (values.get("result") or "").lower() == "error":
            action.message = "Error"
        action.updated_at = row.finish_time
        session.flush()
        return to_dict(row)


def action_events_get(db: Database, action_id: int) -> list[dict]:
    """An action's events, newest first (as Nova lists them)."""
    query = (select(InstanceActionEvent)
             .where(InstanceActionEvent.action_id == action_id,
                    InstanceActionEvent.deleted == 0)
             .order_by(InstanceActionEvent.created_at.desc(), InstanceActionEvent.id.desc()))
    with db.session() as session:
        return [to_dict(r) for r in session.scalars(query)]


# Tags (``instance_tag_*``): a server's tags, each a row of ``tags`` ------------------------

def instance_tag_get_by_instance_uuid(db: Database, instance_uuid: str) -> list[str]:
    query = select(Tag.tag).where(Tag.resource_id == instance_uuid).order_by(Tag.tag)
    with db.session() as session:
        return list(session.scalars(query))


def instance_tag_set(db: Database, instance_uuid: str, tags: list[str]) -> list[str]:
    """Replace the instance's tags with ``tags`` (only the difference is written)."""
    wanted = set(tags)
    with db.session() as session:
        existing = set(session.scalars(select(Tag.tag).where(Tag.resource_id == instance_uuid)))
        if existing - wanted:
            session.execute(Tag.__table__.delete().where(
                Tag.resource_id == instance_uuid, Tag.tag.in_(existing - wanted)))
        session.add_all([Tag(resource_id=instance_uuid, tag=tag)
                         for tag in sorted(wanted - existing)])
    return sorted(wanted)


def instance_tag_add(db: Database, instance_uuid: str, tag: str) -> None:
    with db.session() as session:
        if session.get(Tag, (instance_uuid, tag)) is None:
            session.add(Tag(resource_id=instance_uuid, tag=tag))


def instance_tag_delete(db: Database, instance_uuid: str, tag: str) -> None:
    with db.session() as session:
        deleted = session.execute(Tag.__table__.delete().where(
            Tag.resource_id == instance_uuid, Tag.tag == tag))
        if deleted.rowcount == 0:
            raise nova_exception.InstanceTagNotFound(instance_id=instance_uuid, tag=tag)


def instance_tag_delete_all(db: Database, instance_uuid: str) -> None:
    with db.session() as session:
        session.execute(Tag.__table__.delete().where(Tag.resource_id == instance_uuid))
