"""Reading and writing the API database (upstream: ``nova/objects/build_request.py``,
``request_spec.py``, ``instance_mapping.py``, ``host_mapping.py``, ``cell_mapping.py``).

Plain functions over :class:`~novalab.reference.common.db.Database`, as
``db/api.py`` is for the cell's tables; rows come back as dicts.
"""

from __future__ import annotations

import json
from datetime import date, datetime

from sqlalchemy import delete, select, update

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.nova.db.api_models import (
    BuildRequest,
    CellMapping,
    HostMapping,
    InstanceMapping,
    RequestSpec,
)

# objects.CellMapping.CELL0_UUID: the cell every deployment has for instances
# that never reached a host.
CELL0_UUID = "00000000-0000-0000-0000-000000000000"


class BuildRequestNotFound(exception.NotFound):
    msg_fmt = "BuildRequest not found for instance %(uuid)s"


class InstanceMappingNotFound(exception.NotFound):
    msg_fmt = "Instance %(uuid)s has no mapping to a cell."


class HostMappingNotFound(exception.NotFound):
    msg_fmt = "Host '%(name)s' is not mapped to any cell"


class CellMappingNotFound(exception.NotFound):
    msg_fmt = "Cell %(uuid)s has no mapping."


def _jsonable(value):
    """``value`` as the JSON columns store it: times as ISO 8601 strings, as
    upstream's object serialization writes them."""
    def default(obj):
        if isinstance(obj, (datetime, date)):
            return obj.isoformat()
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")

    return json.loads(json.dumps(value, default=default))


def _dict(row) -> dict:
    return {c.key: getattr(row, c.key) for c in row.__mapper__.column_attrs}


# Cells and hosts ------------------------------------------------------------------------

def cell_mapping_get_all(db: Database) -> list[dict]:
    with db.session() as session:
        return [_dict(r) for r in session.scalars(select(CellMapping).order_by(CellMapping.id))]


def cell_mapping_get_by_uuid(db: Database, uuid: str) -> dict:
    with db.session() as session:
        row = session.scalars(select(CellMapping).where(CellMapping.uuid == uuid)).first()
        if row is None:
            raise CellMappingNotFound(uuid=uuid)
        return _dict(row)


def cell_mapping_create(db: Database, values: dict) -> dict:
    with db.session() as session:
        row = CellMapping(**values)
        session.add(row)
        session.flush()
        return _dict(row)


def host_mapping_get_by_host(db: Database, host: str) -> dict:
    """The host's mapping with its cell under ``cell_mapping``."""
    with db.session() as session:
        found = session.execute(
            select(HostMapping, CellMapping).join(CellMapping, HostMapping.cell_id ==
                                                  CellMapping.id)
            .where(HostMapping.host == host)).first()
        if found is None:
            raise HostMappingNotFound(name=host)
        return dict(_dict(found[0]), cell_mapping=_dict(found[1]))


def host_mapping_create(db: Database, host: str, cell_id: int) -> dict:
    with db.session() as session:
        row = HostMapping(host=host, cell_id=cell_id)
        session.add(row)
        session.flush()
        return _dict(row)


def host_mappings_get_all(db: Database) -> set[str]:
    with db.session() as session:
        return set(session.scalars(select(HostMapping.host)))


# Instances on their way ---------------------------------------------------------------------

def instance_mapping_create(db: Database, values: dict) -> dict:
    with db.session() as session:
        row = InstanceMapping(**values)
        session.add(row)
        session.flush()
        return _dict(row)


def instance_mapping_get_by_instance_uuid(db: Database, uuid: str) -> dict:
    """The mapping, its cell under ``cell_mapping`` (None while it waits for a host)."""
    with db.session() as session:
        found = session.execute(
            select(InstanceMapping, CellMapping)
            .join(CellMapping, InstanceMapping.cell_id == CellMapping.id, isouter=True)
            .where(InstanceMapping.instance_uuid == uuid)).first()
        if found is None:
            raise InstanceMappingNotFound(uuid=uuid)
        cell = None if found[1] is None else _dict(found[1])
        return dict(_dict(found[0]), cell_mapping=cell)


def instance_mappings_get_by_project(db: Database, project_id: str | None) -> list[dict]:
    """Live mappings (``queued_for_delete`` false), one project's or all (None)."""
    query = select(InstanceMapping).where(InstanceMapping.queued_for_delete.is_(False))
    if project_id is not None:
        query = query.where(InstanceMapping.project_id == project_id)
    with db.session() as session:
        return [_dict(r) for r in session.scalars(query)]


def instance_mapping_update(db: Database, uuid: str, values: dict) -> None:
    with db.session() as session:
        done = session.execute(update(InstanceMapping)
                               .where(InstanceMapping.instance_uuid == uuid).values(**values))
        if done.rowcount == 0:
            raise InstanceMappingNotFound(uuid=uuid)


def instance_mapping_destroy(db: Database, uuid: str) -> None:
    with db.session() as session:
        session.execute(delete(InstanceMapping).where(InstanceMapping.instance_uuid == uuid))


def request_spec_create(db: Database, instance_uuid: str, spec: dict) -> dict:
    with db.session() as session:
        row = RequestSpec(instance_uuid=instance_uuid, spec=_jsonable(spec))
        session.add(row)
        session.flush()
        return _dict(row)


def request_specs_get_by_instance_uuids(db: Database, uuids: list[str]) -> dict[str, dict]:
    """The saved specs by instance uuid (one query for a multi-create)."""
    with db.session() as session:
        return {r.instance_uuid: r.spec for r in session.scalars(
            select(RequestSpec).where(RequestSpec.instance_uuid.in_(uuids)))}


def request_spec_destroy(db: Database, instance_uuid: str) -> None:
    with db.session() as session:
        session.execute(delete(RequestSpec).where(RequestSpec.instance_uuid == instance_uuid))


def build_request_create(db: Database, instance: dict, block_device_mappings: list) -> dict:
    with db.session() as session:
        row = BuildRequest(instance_uuid=instance["uuid"], project_id=instance["project_id"],
                           instance=_jsonable(instance),
                           block_device_mappings=_jsonable(block_device_mappings))
        session.add(row)
        session.flush()
        return _dict(row)


def build_request_get_by_instance_uuid(db: Database, uuid: str) -> dict:
    with db.session() as session:
        row = session.scalars(select(BuildRequest)
                              .where(BuildRequest.instance_uuid == uuid)).first()
        if row is None:
            raise BuildRequestNotFound(uuid=uuid)
        return _dict(row)


def build_request_get_all(db: Database, project_id: str | None) -> list[dict]:
    query = select(BuildRequest)
    if project_id is not None:
        query = query.where(BuildRequest.project_id == project_id)
    with db.session() as session:
        return [_dict(r) for r in session.scalars(query)]


def build_request_destroy(db: Database, uuid: str) -> None:
    """Delete it; ``BuildRequestNotFound`` if someone did first (a delete raced us)."""
    with db.session() as session:
        done = session.execute(delete(BuildRequest).where(BuildRequest.instance_uuid == uuid))
        if done.rowcount == 0:
            raise BuildRequestNotFound(uuid=uuid)
