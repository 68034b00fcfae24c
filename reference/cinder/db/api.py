"""The queries behind cinder-api and cinder-volume (``cinder/db/api.py``), as plain dicts.

Both services reach the database directly (Cinder has no conductor). Reads are
scoped as upstream's ``model_query(project_only=True)``: a user sees the rows of
their project, an admin every row. State changes that race (two attach requests
for one volume) go through :func:`volume_conditional_update`, Cinder's
compare-and-swap: ``UPDATE ... WHERE status IN (...)`` and a row count.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import exists, func, select, update

from novalab.reference.cinder import exception
from novalab.reference.cinder.db.models import (
    Message,
    Snapshot,
    Volume,
    VolumeAttachment,
    VolumeGlanceMetadata,
)
from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database, utcnow

# Attachment statuses (cinder.objects.fields.VolumeAttachStatus).
RESERVED, ATTACHING, ATTACHED, DETACHED = "reserved", "attaching", "attached", "detached"


def _columns(row) -> dict:
    return {c.key: getattr(row, c.key) for c in row.__mapper__.column_attrs}


def attachment_to_dict(row: VolumeAttachment) -> dict:
    return _columns(row)


def _volume_dict(session, row: Volume) -> dict:
    values = _columns(row)
    values["metadata"] = values.pop("metadata_items") or {}
    values["name"] = row.name
    values["volume_attachment"] = [attachment_to_dict(a) for a in session.scalars(
        select(VolumeAttachment).where(VolumeAttachment.volume_id == row.id,
                                       VolumeAttachment.deleted.is_(False))
        .order_by(VolumeAttachment.created_at))]
    values["volume_glance_metadata"] = {m.key: m.value for m in session.scalars(
        select(VolumeGlanceMetadata).where(VolumeGlanceMetadata.volume_id == row.id,
                                           VolumeGlanceMetadata.deleted.is_(False)))}
    return values


def _project_only(query, model, context: RequestContext | None):
    if context is None or context.is_admin:
        return query
    return query.where(model.project_id == context.project_id)


# Volumes ------------------------------------------------------------------------------

def volume_create(db: Database, values: dict) -> dict:
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    values["metadata_items"] = values.pop("metadata", None) or {}
    with db.session() as session:
        row = Volume(**values)
        session.add(row)
        session.flush()
        return _volume_dict(session, row)


def volume_get(db: Database, volume_id: str, context: RequestContext | None = None) -> dict:
    """The live volume; ``VolumeNotFound`` if it is missing or another project's."""
    query = select(Volume).where(Volume.id == volume_id, Volume.deleted.is_(False))
    with db.session() as session:
        row = session.scalars(_project_only(query, Volume, context)).first()
        if row is None:
            raise exception.VolumeNotFound(volume_id=volume_id)
        return _volume_dict(session, row)


def volume_get_all(db: Database, context: RequestContext, *, all_projects: bool = False,
                   filters: dict | None = None, limit: int | None = None,
                   marker: str | None = None) -> list[dict]:
    """Live volumes, newest first (upstream's default sort: created_at, id descending)."""
    with db.session() as session:
        rows = _live_page(session, Volume, context, all_projects, filters, limit, marker)
        return [_volume_dict(session, row) for row in rows]


def _live_page(session, model, context: RequestContext, all_projects: bool,
               filters: dict | None, limit: int | None, marker: str | None) -> list:
    """One page of ``model``'s live rows the caller may see, filtered, newest first
    (created_at, id descending), after ``marker`` and at most ``limit`` long."""
    query = select(model).where(model.deleted.is_(False))
    if not (all_projects and context.is_admin):
        query = query.where(model.project_id == context.project_id)
    for key, value in (filters or {}).items():
        column = "display_name" if key == "name" else key
        query = query.where(getattr(model, column) == value)
    rows = list(session.scalars(query.order_by(model.created_at.desc(), model.id.desc())))
    if marker is not None:
        ids = [row.id for row in rows]
        if marker not in ids:
            raise exception.InvalidInput(reason=f"marker [{marker}] not found")
        rows = rows[ids.index(marker) + 1:]
    return rows if limit is None else rows[:limit]


def volume_update(db: Database, volume_id: str, values: dict) -> dict:
    values = dict(values)
    if "metadata" in values:
        values["metadata_items"] = values.pop("metadata")
    with db.session() as session:
        row = session.get(Volume, volume_id)
        if row is None or row.deleted:
            raise exception.VolumeNotFound(volume_id=volume_id)
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return _volume_dict(session, row)


class Not:
    """An expected value that must *not* hold (``cinder.db.utils.Not``)."""

    def __init__(self, value):
        self.value = value


def volume_conditional_update(db: Database, volume_id: str, values: dict,
                              expected: dict, *, no_snapshots: bool = False) -> bool:
    """Set ``values`` only if each column of ``expected`` holds (one of) its value(s).

    Cinder's ``conditional_update``: the check and the write are one statement,
    so of two concurrent reservations exactly one wins.
    """
    query = update(Volume).where(Volume.id == volume_id, Volume.deleted.is_(False))
    if no_snapshots:  # upstream's ~Volume.has_snapshot_filter(), in the same statement
        query = query.where(~exists().where(Snapshot.volume_id == Volume.id,
                                            Snapshot.deleted.is_(False)))
    for key, value in expected.items():
        column = getattr(Volume, key)
        if isinstance(value, Not):
            query = query.where(column != value.value)
        elif isinstance(value, (tuple, list, set)):
            query = query.where(column.in_(list(value)))
        else:
            query = query.where(column == value)
    with db.session() as session:
        result = session.execute(query.values(**values, updated_at=utcnow()))
        return result.rowcount == 1


def volume_destroy(db: Database, volume_id: str) -> None:
    """Soft-delete the volume and its attachments' and image metadata rows."""
    now = utcnow()
    with db.session() as session:
        session.execute(update(Volume).where(Volume.id == volume_id).values(
            status="deleted", attach_status=DETACHED, deleted=True, deleted_at=now,
            terminated_at=now, updated_at=now))
        for model in (VolumeAttachment, VolumeGlanceMetadata):
            session.execute(update(model).where(model.volume_id == volume_id,
                                                model.deleted.is_(False))
                            .values(deleted=True, deleted_at=now))


def volume_glance_metadata_bulk_create(db: Database, volume_id: str, metadata: dict) -> None:
    with db.session() as session:
        for key, value in metadata.items():
            session.add(VolumeGlanceMetadata(volume_id=volume_id, key=key,
                                             value=None if value is None else str(value)))


# Attachments --------------------------------------------------------------------------

def volume_attach(db: Database, values: dict) -> dict:
    """Create an attachment row (upstream's name for it)."""
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    with db.session() as session:
        row = VolumeAttachment(**values)
        session.add(row)
        session.flush()
        return attachment_to_dict(row)


def _attachment_query(context: RequestContext | None):
    query = (select(VolumeAttachment)
             .join(Volume, Volume.id == VolumeAttachment.volume_id)
             .where(VolumeAttachment.deleted.is_(False)))
    return _project_only(query, Volume, context)


def volume_attachment_get(db: Database, attachment_id: str,
                          context: RequestContext | None = None) -> dict:
    query = _attachment_query(context).where(VolumeAttachment.id == attachment_id)
    with db.session() as session:
        row = session.scalars(query).first()
        if row is None:
            raise exception.VolumeAttachmentNotFound(filter=f"attachment_id = {attachment_id}")
        return attachment_to_dict(row)


def volume_attachment_get_all(db: Database, context: RequestContext, *,
                              all_projects: bool = False,
                              filters: dict | None = None) -> list[dict]:
    query = _attachment_query(None)
    if not (all_projects and context.is_admin):
        query = query.where(Volume.project_id == context.project_id)
    for key, value in (filters or {}).items():
        query = query.where(getattr(VolumeAttachment, key) == value)
    with db.session() as session:
        return [attachment_to_dict(row) for row in
                session.scalars(query.order_by(VolumeAttachment.created_at))]


def volume_attachment_update(db: Database, attachment_id: str, values: dict) -> dict:
    with db.session() as session:
        row = session.get(VolumeAttachment, attachment_id)
        if row is None or row.deleted:
            raise exception.VolumeAttachmentNotFound(filter=f"attachment_id = {attachment_id}")
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return attachment_to_dict(row)


def volume_attached(db: Database, attachment_id: str, instance_uuid: str | None,
                    host_name: str | None, mountpoint: str | None, attach_mode: str = "rw",
                    mark_attached: bool = True) -> dict:
    """Record where the volume is attached; the volume turns attaching (or in-use)."""
    attach_status, volume_status = ((ATTACHED, "in-use") if mark_attached
                                    else (ATTACHING, "attaching"))
    with db.session() as session:
        attachment = session.get(VolumeAttachment, attachment_id)
        if attachment is None or attachment.deleted:
            raise exception.VolumeAttachmentNotFound(filter=f"attachment_id = {attachment_id}")
        attachment.mountpoint = mountpoint
        attachment.attach_status = attach_status
        attachment.instance_uuid = instance_uuid
        attachment.attached_host = host_name
        attachment.attach_time = utcnow()
        attachment.attach_mode = attach_mode
        volume = session.get(Volume, attachment.volume_id)
        volume.status = volume_status
        volume.attach_status = attach_status
        session.flush()
        return _volume_dict(session, volume)


# The volume's status for the attachments that remain (upstream's
# _get_statuses_from_attachments): the most advanced one wins.
_STATUS_FOR = ((ATTACHED, "in-use"), (ATTACHING, "attaching"), ("detaching", "detaching"),
               (RESERVED, "reserved"))


def volume_detached(db: Database, volume_id: str, attachment_id: str) -> dict:
    """Delete the attachment; the volume's status follows the attachments left."""
    now = utcnow()
    with db.session() as session:
        attachment = session.get(VolumeAttachment, attachment_id)
        if attachment is not None and not attachment.deleted:
            attachment.attach_status = DETACHED
            attachment.detach_time = now
            attachment.deleted = True
            attachment.deleted_at = now
        session.flush()
        left = {a.attach_status for a in session.scalars(
            select(VolumeAttachment).where(VolumeAttachment.volume_id == volume_id,
                                           VolumeAttachment.deleted.is_(False)))}
        status, attach_status = "available", DETACHED
        for candidate, volume_status in _STATUS_FOR:
            if candidate in left:
                status, attach_status = volume_status, candidate
                break
        volume = session.get(Volume, volume_id)
        volume.status = status
        volume.attach_status = attach_status
        session.flush()
        return _volume_dict(session, volume)


# Messages -----------------------------------------------------------------------------

def message_create(db: Database, values: dict) -> dict:
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    with db.session() as session:
        row = Message(**values)
        session.add(row)
        session.flush()
        return _columns(row)


def message_get(db: Database, message_id: str, context: RequestContext) -> dict:
    query = _project_only(select(Message).where(Message.id == message_id,
                                                Message.deleted.is_(False)), Message, context)
    with db.session() as session:
        row = session.scalars(query).first()
        if row is None:
            raise exception.MessageNotFound(message_id=message_id)
        return _columns(row)


def message_get_all(db: Database, context: RequestContext,
                    resource_uuids: Iterable[str] | None = None) -> list[dict]:
    query = select(Message).where(Message.deleted.is_(False),
                                  Message.project_id == context.project_id)
    if resource_uuids is not None:
        query = query.where(Message.resource_uuid.in_(list(resource_uuids)))
    with db.session() as session:
        return [_columns(row) for row in
                session.scalars(query.order_by(Message.created_at.desc()))]


def message_destroy(db: Database, message_id: str, context: RequestContext) -> None:
    message_get(db, message_id, context)
    with db.session() as session:
        session.execute(update(Message).where(Message.id == message_id).values(deleted=True))


# Quotas -------------------------------------------------------------------------------

def volume_data_get_for_project(db: Database, project_id: str) -> tuple[int, int]:
    """(volumes, gigabytes) the project's live volumes use: what its quota counts."""
    query = select(func.count(Volume.id), func.coalesce(func.sum(Volume.size), 0)).where(
        Volume.project_id == project_id, Volume.deleted.is_(False))
    with db.session() as session:
        count, gigabytes = session.execute(query).one()
        return int(count), int(gigabytes)


def snapshot_data_get_for_project(db: Database, project_id: str) -> tuple[int, int]:
    """(snapshots, gigabytes) the project's live snapshots use."""
    query = select(func.count(Snapshot.id),
                   func.coalesce(func.sum(Snapshot.volume_size), 0)).where(
        Snapshot.project_id == project_id, Snapshot.deleted.is_(False))
    with db.session() as session:
        count, gigabytes = session.execute(query).one()
        return int(count), int(gigabytes)


# Snapshots ----------------------------------------------------------------------------

def _snapshot_dict(row: Snapshot) -> dict:
    values = _columns(row)
    values["metadata"] = values.pop("metadata_items") or {}
    values["name"] = row.name
    return values


def snapshot_create(db: Database, values: dict) -> dict:
    values = dict(values)
    values.setdefault("id", str(uuid.uuid4()))
    values["metadata_items"] = values.pop("metadata", None) or {}
    with db.session() as session:
        row = Snapshot(**values)
        session.add(row)
        session.flush()
        return _snapshot_dict(row)


def snapshot_get(db: Database, snapshot_id: str,
                 context: RequestContext | None = None) -> dict:
    """The live snapshot; ``SnapshotNotFound`` if it is missing or another project's."""
    query = select(Snapshot).where(Snapshot.id == snapshot_id, Snapshot.deleted.is_(False))
    with db.session() as session:
        row = session.scalars(_project_only(query, Snapshot, context)).first()
        if row is None:
            raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
        return _snapshot_dict(row)


def snapshot_get_all(db: Database, context: RequestContext, *, all_projects: bool = False,
                     filters: dict | None = None, limit: int | None = None,
                     marker: str | None = None) -> list[dict]:
    """Live snapshots, newest first (created_at, id descending, as upstream sorts)."""
    with db.session() as session:
        rows = _live_page(session, Snapshot, context, all_projects, filters, limit, marker)
        return [_snapshot_dict(row) for row in rows]


def snapshot_update(db: Database, snapshot_id: str, values: dict) -> dict:
    with db.session() as session:
        row = session.get(Snapshot, snapshot_id)
        if row is None or row.deleted:
            raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return _snapshot_dict(row)


def snapshot_conditional_update(db: Database, snapshot_id: str, values: dict,
                                expected_status) -> bool:
    """Set ``values`` only if the snapshot's status is (one of) ``expected_status``."""
    statuses = [expected_status] if isinstance(expected_status, str) else list(expected_status)
    query = update(Snapshot).where(Snapshot.id == snapshot_id, Snapshot.deleted.is_(False),
                                   Snapshot.status.in_(statuses))
    with db.session() as session:
        return session.execute(query.values(**values, updated_at=utcnow())).rowcount == 1


def snapshot_destroy(db: Database, snapshot_id: str) -> None:
    now = utcnow()
    with db.session() as session:
        session.execute(update(Snapshot).where(Snapshot.id == snapshot_id).values(
            status="deleted", deleted=True, deleted_at=now, updated_at=now))
