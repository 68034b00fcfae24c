"""The attachments resource (``cinder/api/v3/attachments.py``), microversion 3.27+.

``POST`` reserves the volume for an instance (and, given the host's
``connector``, answers the ``connection_info`` at once); ``PUT`` adds the
connector later (Nova's boot-from-volume path); ``POST .../action``
``{"os-complete": null}`` (3.44) marks the volume in-use; ``DELETE`` detaches.
Backend failures are a 500 naming the attachment step, as upstream answers.
"""

from __future__ import annotations

import logging

from flask import Flask, g, jsonify, request

from novalab.reference.cinder import exception, policy
from novalab.reference.cinder.api import schemas, versions, views
from novalab.reference.cinder.db import api as db_api
from novalab.reference.common import exception as common_exception
from novalab.reference.common import validation
from novalab.reference.common.wsgi import json_body
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

PATH = "cinder/api/v3/attachments.py"
FILTERS = {"volume_id": "volume_id", "status": "attach_status",
           "instance_id": "instance_uuid", "attach_status": "attach_status"}


def _server_error(message: str, exc: Exception) -> common_exception.NovaLabException:
    detail = exc.format_message() if isinstance(exc, common_exception.NovaLabException) \
        else None
    LOG.error("%s: %s", message, exc)
    return common_exception.NovaLabException(f"{message} ({detail})." if detail
                                             else f"{message}.")


class AttachmentsController:
    def __init__(self, db, volume_api, tracer):
        self.db = db
        self.volume_api = volume_api
        self.tracer = tracer

    def _get(self, attachment_id: str) -> dict:
        return db_api.volume_attachment_get(self.db, attachment_id, g.context)

    @upstream(PATH, "AttachmentsController.show")
    def show(self, attachment_id: str) -> dict:
        versions.require(versions.NEW_ATTACH)
        return {"attachment": views.attachment_detail(self._get(attachment_id))}

    @upstream(PATH, "AttachmentsController._items")
    def _items(self) -> list[dict]:
        versions.require(versions.NEW_ATTACH)
        filters = {FILTERS[k]: v for k, v in request.args.items() if k in FILTERS}
        all_tenants = request.args.get("all_tenants", "").lower() in ("1", "true", "yes", "on")
        return db_api.volume_attachment_get_all(self.db, g.context, all_projects=all_tenants,
                                                filters=filters)

    @upstream(PATH, "AttachmentsController.create")
    def create(self, body: dict) -> dict:
        versions.require(versions.NEW_ATTACH)
        spec = body["attachment"]
        volume = self.volume_api.get(g.context, spec["volume_uuid"])
        try:
            attachment = self.volume_api.attachment_create(
                g.context, volume, spec.get("instance_uuid"), spec.get("connector"))
        except (common_exception.Forbidden, common_exception.NotAuthorized,
                exception.InvalidVolume):
            raise
        except Exception as exc:
            raise _server_error("Unable to create attachment for volume", exc) from exc
        return {"attachment": views.attachment_detail(attachment)}

    @upstream(PATH, "AttachmentsController.update")
    def update(self, attachment_id: str, body: dict) -> dict:
        versions.require(versions.NEW_ATTACH)
        attachment = self._get(attachment_id)
        try:
            attachment = self.volume_api.attachment_update(g.context, attachment,
                                                           body["attachment"]["connector"])
        except (common_exception.Forbidden, common_exception.NotAuthorized,
                common_exception.Invalid):
            raise
        except Exception as exc:
            raise _server_error("Unable to update attachment", exc) from exc
        return {"attachment": views.attachment_detail(attachment)}

    @upstream(PATH, "AttachmentsController.delete")
    def delete(self, attachment_id: str) -> dict:
        versions.require(versions.NEW_ATTACH)
        attachment = self._get(attachment_id)
        left = self.volume_api.attachment_delete(g.context, attachment)
        return {"attachments": [views.attachment_summary(a) for a in left]}

    @upstream(PATH, "AttachmentsController.complete")
    def complete(self, attachment_id: str, body: dict) -> None:
        """The guest has the volume: attachment attached, volume in-use."""
        versions.require(versions.NEW_ATTACH_COMPLETION)
        attachment = self._get(attachment_id)
        volume = self.volume_api.get(g.context, attachment["volume_id"])
        policy.authorize(g.context, "volume:attachment_complete", volume)
        db_api.volume_attachment_update(self.db, attachment_id,
                                        {"attach_status": db_api.ATTACHED})
        db_api.volume_update(self.db, volume["id"], {"status": "in-use",
                                                     "attach_status": db_api.ATTACHED})


def register(app: Flask, controller: AttachmentsController) -> None:
    prefix = "/v3/<project_id>/attachments"

    @app.post(prefix)
    @validation.schema(schemas.ATTACHMENT_CREATE)
    def create_attachment(project_id):
        return jsonify(controller.create(json_body()))

    @app.get(prefix)
    def list_attachments(project_id):
        return jsonify({"attachments": [views.attachment_summary(a)
                                        for a in controller._items()]})

    @app.get(f"{prefix}/detail")
    def list_attachments_detail(project_id):
        return jsonify({"attachments": [views.attachment_detail(a)
                                        for a in controller._items()]})

    @app.get(f"{prefix}/<attachment_id>")
    def show_attachment(project_id, attachment_id):
        return jsonify(controller.show(attachment_id))

    @app.put(f"{prefix}/<attachment_id>")
    @validation.schema(schemas.ATTACHMENT_UPDATE)
    def update_attachment(project_id, attachment_id):
        return jsonify(controller.update(attachment_id, json_body()))

    @app.delete(f"{prefix}/<attachment_id>")
    def delete_attachment(project_id, attachment_id):
        return jsonify(controller.delete(attachment_id))

    @app.post(f"{prefix}/<attachment_id>/action")
    @validation.schema(schemas.ATTACHMENT_ACTION)
    def attachment_action(project_id, attachment_id):
        body = json_body()
        if "os-complete" not in body:
            raise common_exception.Invalid(f"There is no such action: {', '.join(body)}")
        controller.complete(attachment_id, body)
        return "", 204
