"""The messages resource (``cinder/api/v3/messages.py``), microversion 3.3+.

What went wrong with an asynchronous request, in words a user may see:
``GET /v3/{project_id}/messages`` (optionally ``?resource_uuid=``), ``GET`` and
``DELETE /messages/{id}``. Pagination and sorting are left out.
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from novalab.reference.cinder import policy
from novalab.reference.cinder.api import versions, views
from novalab.reference.cinder.db import api as db_api
from novalab.tracing.spans import upstream

PATH = "cinder/api/v3/messages.py"


class MessagesController:
    def __init__(self, db, tracer):
        self.db = db
        self.tracer = tracer

    @upstream(PATH, "MessagesController.index")
    def index(self) -> dict:
        versions.require(versions.MESSAGES)
        policy.authorize(g.context, "message:get_all")
        resource = request.args.get("resource_uuid")
        rows = db_api.message_get_all(self.db, g.context,
                                      None if resource is None else [resource])
        return {"messages": [views.message_view(request.host_url, m) for m in rows]}

    @upstream(PATH, "MessagesController.show")
    def show(self, message_id: str) -> dict:
        versions.require(versions.MESSAGES)
        policy.authorize(g.context, "message:get")
        row = db_api.message_get(self.db, message_id, g.context)
        return {"message": views.message_view(request.host_url, row)}

    @upstream(PATH, "MessagesController.delete")
    def delete(self, message_id: str) -> None:
        versions.require(versions.MESSAGES)
        policy.authorize(g.context, "message:delete")
        db_api.message_destroy(self.db, message_id, g.context)


def register(app: Flask, controller: MessagesController) -> None:
    prefix = "/v3/<project_id>/messages"

    @app.get(prefix)
    def list_messages(project_id):
        return jsonify(controller.index())

    @app.get(f"{prefix}/<message_id>")
    def show_message(project_id, message_id):
        return jsonify(controller.show(message_id))

    @app.delete(f"{prefix}/<message_id>")
    def delete_message(project_id, message_id):
        controller.delete(message_id)
        return "", 204
