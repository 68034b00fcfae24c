"""``os-volume_attachments`` (``compute/volume_attachments.py``): a server's volumes.

    GET    /v2.1/servers/{id}/os-volume_attachments              list (limit, offset)
    GET    /v2.1/servers/{id}/os-volume_attachments/{volume_id}  show
    POST   /v2.1/servers/{id}/os-volume_attachments              attach: 200, the device
    DELETE /v2.1/servers/{id}/os-volume_attachments/{volume_id}  detach: 202

An attachment is named by its volume's id and shows ``id``, ``serverId``,
``volumeId`` and ``device`` in every version novalab serves (``tag`` and
``delete_on_termination`` appear from 2.70 and 2.79). Attach and detach answer
before the work: the compute host does it (``compute/volume_attach.py``), the
server's instance actions (``attach_volume``, ``detach_volume``) and the
volume's status in Cinder tell how it went. A server in a state that takes no
attach or detach is a 409; a volume Cinder will not hand over a 400; a volume
the server does not have a 404. Swapping a volume (``PUT``) is a 501 that says
novalab does not implement it.
"""

from __future__ import annotations

from flask import g, jsonify, request
from opentelemetry import trace

from novalab.reference.common import exception, validation
from novalab.reference.common.wsgi import json_body, nova_fault
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.actions import raise_http_conflict_for_instance_invalid_state
from novalab.reference.nova.api.common import get_authorized_instance
from novalab.reference.nova.api.schemas import volume_attachments as schema
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

_VOLUMES = "nova/api/openstack/compute/volume_attachments.py"
POLICY_ROOT = "os_compute_api:os-volumes-attachments:%s"
MAX_LIMIT = 1000  # CONF.api.max_limit


def _translate_attachment_detail_view(bdm: dict, server_id: str) -> dict:
    """``_translate_attachment_detail_view``: the fields of 2.1-2.69."""
    return {"id": bdm["volume_id"], "serverId": server_id, "volumeId": bdm["volume_id"],
            "device": bdm["device_name"]}


def _int_param(name: str, default: int) -> int:
    value = request.args.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise exception.Invalid(f"{name} param must be an integer") from None
    if number < 0:
        raise exception.Invalid(f"{name} param must be positive")
    return number


class VolumeAttachmentController:
    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _instance(self, server_id: str, rule: str) -> dict:
        return get_authorized_instance(self.compute_api, server_id, POLICY_ROOT % rule)

    def _bdm(self, instance: dict, volume_id: str) -> dict:
        for bdm in self.compute_api.volume_bdms(g.context, instance):
            if bdm["volume_id"] == volume_id:
                return bdm
        raise exception.NotFound(
            f"Instance {instance['uuid']} is not attached to volume {volume_id}")

    @upstream(_VOLUMES, "VolumeAttachmentController.index")
    def index(self, server_id: str):
        instance = self._instance(server_id, "index")
        limit = min(_int_param("limit", MAX_LIMIT), MAX_LIMIT)
        offset = _int_param("offset", 0)
        bdms = self.compute_api.volume_bdms(g.context, instance)[offset:offset + limit]
        return jsonify({"volumeAttachments": [
            _translate_attachment_detail_view(b, instance["uuid"]) for b in bdms]})

    @upstream(_VOLUMES, "VolumeAttachmentController.show")
    def show(self, server_id: str, id: str):  # noqa: A002 - upstream's name (the volume's id)
        instance = self._instance(server_id, "show")
        bdm = self._bdm(instance, id)
        return jsonify({"volumeAttachment": _translate_attachment_detail_view(
            bdm, instance["uuid"])})

    @upstream(_VOLUMES, "VolumeAttachmentController.create")
    def create(self, server_id: str):
        params = json_body()["volumeAttachment"]  # checked by its version's schema
        instance = self._instance(server_id, "create")
        if params.get("tag") is not None:
            raise exception.ValidationError(
                detail="Device tags (a 'tag' on a volume attachment) are for the guest's "
                       "device metadata, which novalab does not implement (see README.md, "
                       "\"Left out, on purpose\").")
        trace.get_current_span().set_attribute(attr.NOVA_INSTANCE_UUID, instance["uuid"])
        try:
            device = self.compute_api.attach_volume(g.context, instance, params["volumeId"],
                                                    params.get("device"))
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, "attach_volume", server_id)
        return jsonify({"volumeAttachment": {
            "id": params["volumeId"], "serverId": instance["uuid"],
            "volumeId": params["volumeId"], "device": device}})

    @upstream(_VOLUMES, "VolumeAttachmentController.delete")
    def delete(self, server_id: str, id: str):  # noqa: A002
        instance = self._instance(server_id, "delete")
        self.compute_api.volume_api.get(g.context, id)  # VolumeNotFound: a 404
        bdm = self._bdm(instance, id)
        if bdm.get("boot_index") == 0:
            raise exception.Invalid("Cannot detach a root device volume")
        try:
            self.compute_api.detach_volume(g.context, instance, bdm)
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, "detach_volume", server_id)
        return "", 202


def register(app, compute_api: ComputeAPI, tracer) -> None:
    controller = VolumeAttachmentController(compute_api, tracer)
    prefix = "/v2.1/servers/<server_id>/os-volume_attachments"
    app.add_url_rule(prefix, "volume_attachments_index", controller.index, methods=["GET"])
    app.add_url_rule(prefix, "volume_attachments_create",
                     versions.schemas(schema.CREATE)(controller.create), methods=["POST"])
    app.add_url_rule(f"{prefix}/<id>", "volume_attachments_show", controller.show,
                     methods=["GET"])
    app.add_url_rule(f"{prefix}/<id>", "volume_attachments_delete", controller.delete,
                     methods=["DELETE"])

    @validation.raw_body("a volume swap is refused unread: novalab does not implement it")
    def volume_attachments_update(server_id, id):  # noqa: A002
        # Upstream's answer when the driver cannot swap (raise_feature_not_supported).
        return nova_fault(501, "Swapping the volume of an attachment (PUT): novalab does "
                               "not implement it (see README.md, \"Left out, on purpose\").")

    app.add_url_rule(f"{prefix}/<id>", "volume_attachments_update", volume_attachments_update,
                     methods=["PUT"])
