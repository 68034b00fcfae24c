"""How volumes, attachments and messages look on the wire (``cinder/api/v3/views/``).

Volume details carry the fields of upstream's v3 view for the negotiated
microversion (``group_id`` from 3.13, ``provider_id`` for admins from 3.21;
docs/nova.md lists them) plus the extension attributes each policy lets the
caller see, as upstream's controller extensions add them: the project
(``os-vol-tenant-attr:tenant_id``, readers of the volume's project), the host
(``os-vol-host-attr:host``) and the migration state (``os-vol-mig-status-attr``,
null: novalab never migrates a volume) for admins; ``volume_image_metadata`` once
the volume was made from an image. ``bootable`` is the string ``"true"`` or
``"false"``, as upstream sends it. ``volume_type`` is ``__DEFAULT__``, the type
every volume has here, as in upstream since Train (docs/decisions.md).
"""

from __future__ import annotations

from datetime import datetime

from novalab.reference.cinder import message, policy
from novalab.reference.cinder.api import versions
from novalab.reference.common.context import RequestContext


def iso(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def _links(base: str, project_id: str, kind: str, item_id: str) -> list[dict]:
    root = base.rstrip("/")
    return [{"rel": "self", "href": f"{root}/v3/{project_id}/{kind}/{item_id}"},
            {"rel": "bookmark", "href": f"{root}/{project_id}/{kind}/{item_id}"}]


def volume_summary(base: str, volume: dict) -> dict:
    return {"id": volume["id"], "name": volume["display_name"],
            "links": _links(base, volume["project_id"], "volumes", volume["id"])}


def _attachments(volume: dict, context: RequestContext) -> list[dict]:
    """The attached attachments, as the volume view lists them."""
    shown = []
    for attachment in volume["volume_attachment"]:
        if attachment["attach_status"] != "attached":
            continue
        shown.append({
            "id": volume["id"], "attachment_id": attachment["id"],
            "volume_id": volume["id"], "server_id": attachment["instance_uuid"],
            "host_name": (attachment["attached_host"]
                          if context.is_admin or "service" in context.roles else None),
            "device": attachment["mountpoint"], "attached_at": iso(attachment["attach_time"])})
    return shown


def volume_detail(base: str, volume: dict, context: RequestContext,
                  extensions: bool = True) -> dict:
    """The v3 detail view; ``extensions``: with what the controller extensions add on
    show and detail (upstream's ``@wsgi.extends``), which a create answer lacks."""
    view = {
        "id": volume["id"], "status": volume["status"], "size": volume["size"],
        "availability_zone": volume["availability_zone"],
        "created_at": iso(volume["created_at"]), "updated_at": iso(volume["updated_at"]),
        "name": volume["display_name"], "description": volume["display_description"],
        "volume_type": volume["volume_type"], "snapshot_id": None, "source_volid": None,
        "metadata": volume["metadata"],
        "links": _links(base, volume["project_id"], "volumes", volume["id"]),
        "user_id": volume["user_id"], "bootable": str(bool(volume["bootable"])).lower(),
        "encrypted": False, "replication_status": None, "consistencygroup_id": None,
        "multiattach": bool(volume["multiattach"]),
        "attachments": _attachments(volume, context),
    }
    target = {"project_id": volume["project_id"]}
    if context.is_admin:
        view["migration_status"] = None
    if extensions:
        _extend(view, volume, context, target)
    version = versions.requested()
    if version >= versions.GROUP_VOLUME:
        view["group_id"] = None
    if context.is_admin and version >= versions.VOLUME_DETAIL_PROVIDER_ID:
        view["provider_id"] = None
    return view


def _extend(view: dict, volume: dict, context: RequestContext, target: dict) -> None:
    """The attributes of the volume controller's extensions, each behind its policy."""
    if policy.check(context, "volume_extension:volume_tenant_attribute", target):
        view["os-vol-tenant-attr:tenant_id"] = volume["project_id"]
    if policy.check(context, "volume_extension:volume_host_attribute", target):
        view["os-vol-host-attr:host"] = volume["host"]
    if policy.check(context, "volume_extension:volume_mig_status_attribute", target):
        view["os-vol-mig-status-attr:migstat"] = None
        view["os-vol-mig-status-attr:name_id"] = None
    if volume["volume_glance_metadata"]:
        view["volume_image_metadata"] = dict(volume["volume_glance_metadata"])


def attachment_summary(attachment: dict) -> dict:
    return {"id": attachment["id"], "status": attachment["attach_status"],
            "instance": attachment["instance_uuid"], "volume_id": attachment["volume_id"]}


def attachment_detail(attachment: dict) -> dict:
    view = attachment_summary(attachment)
    view.update(attached_at=iso(attachment["attach_time"]) or "",
                detached_at=iso(attachment["detach_time"]) or "",
                attach_mode=attachment["attach_mode"],
                connection_info=attachment["connection_info"] or {})
    return view


def message_view(base: str, msg: dict) -> dict:
    return {"id": msg["id"], "message_level": msg["message_level"],
            "event_id": msg["event_id"],
            "user_message": message.user_message(msg["action_id"], msg["detail_id"]),
            "resource_type": msg["resource_type"], "resource_uuid": msg["resource_uuid"],
            "request_id": msg["request_id"], "created_at": iso(msg["created_at"]),
            "guaranteed_until": iso(msg["expires_at"]),
            "links": _links(base, msg["project_id"], "messages", msg["id"])}
