"""Volume snapshots (``cinder/api/v3/snapshots.py``): create, list, list detail, show, delete.

    POST   /v3/{project_id}/snapshots           202, the snapshot ``creating``
    GET    /v3/{project_id}/snapshots           summary
    GET    /v3/{project_id}/snapshots/detail    detail
    GET    /v3/{project_id}/snapshots/{id}      detail
    DELETE /v3/{project_id}/snapshots/{id}      202, ``deleting``

The work happens in cinder-volume (an RBD snapshot of the volume's image); the
client polls until ``available`` (or ``error``: ``GET /messages`` says why).
What a snapshot shows depends on the microversion: ``group_snapshot_id`` from
3.14 and ``user_id`` from 3.41 on show and detail; the project and progress
(``os-extended-snapshot-attributes:*``) to readers of its project on show and
detail, as upstream's controller extension adds them. A volume that has
snapshots cannot be deleted (400).
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from novalab.reference.cinder import exception, policy
from novalab.reference.cinder.api import versions
from novalab.reference.cinder.api.views import iso
from novalab.reference.common import validation
from novalab.reference.common.validation import parameter_types
from novalab.reference.common.wsgi import json_body
from novalab.tracing.spans import upstream

PATH = "cinder/api/v3/snapshots.py"
GROUP_SNAPSHOTS = (3, 14)
SNAPSHOT_LIST_USER_ID = (3, 41)
_TRUE = ("1", "t", "true", "on", "y", "yes")
_FALSE = ("0", "f", "false", "off", "n", "no")
_NAME = {"type": ["string", "null"], "maxLength": 255, "pattern": r"^[^\x00]*$"}

# cinder/api/schemas/snapshots.py: create (unknown properties pass, as upstream's).
SNAPSHOT_CREATE = {
    "type": "object",
    "properties": {
        "snapshot": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "display_name": _NAME,
                "description": parameter_types.description(255),
                "display_description": parameter_types.description(255),
                "volume_id": parameter_types.uuid(),
                "force": {"type": ["boolean", "string"]},
                "metadata": {"type": ["object", "null"],
                             "additionalProperties": {"type": "string", "maxLength": 255}},
            },
            "required": ["volume_id"],
            "additionalProperties": True,
        },
    },
    "required": ["snapshot"],
    "additionalProperties": False,
}


def _force(value) -> bool:
    """``strutils.bool_from_string(force, strict=True)``."""
    if isinstance(value, bool):
        return value
    if str(value).lower() in _TRUE:
        return True
    if str(value).lower() in _FALSE:
        return False
    raise exception.InvalidInput(reason=f"Invalid value '{value}' for force.")


def summary(snapshot: dict) -> dict:
    """The v2/v3 view's fields (upstream's summary and detail start the same)."""
    return {"id": snapshot["id"], "created_at": iso(snapshot["created_at"]),
            "updated_at": iso(snapshot["updated_at"]), "name": snapshot["display_name"],
            "description": snapshot["display_description"],
            "volume_id": snapshot["volume_id"], "status": snapshot["status"],
            "size": snapshot["volume_size"], "metadata": snapshot["metadata"]}


def detail(snapshot: dict, extensions: bool = True) -> dict:
    """The v3 detail view for the request's version, with the extension's attributes."""
    view = summary(snapshot)
    if versions.requested() >= GROUP_SNAPSHOTS:
        view["group_snapshot_id"] = None  # novalab has no group snapshots
    if versions.requested() >= SNAPSHOT_LIST_USER_ID:
        view["user_id"] = snapshot["user_id"]
    if extensions and policy.check(g.context, "volume_extension:extended_snapshot_attributes",
                                   {"project_id": snapshot["project_id"]}):
        view["os-extended-snapshot-attributes:project_id"] = snapshot["project_id"]
        view["os-extended-snapshot-attributes:progress"] = snapshot["progress"]
    return view


class SnapshotsController:
    def __init__(self, volume_api, tracer):
        self.volume_api = volume_api
        self.tracer = tracer

    @upstream(PATH, "SnapshotsController.create")
    def create(self, body: dict) -> dict:
        snapshot = body["snapshot"]
        volume = self.volume_api.get(g.context, snapshot["volume_id"])
        created = self.volume_api.create_snapshot(
            g.context, volume, snapshot.get("name", snapshot.get("display_name")),
            snapshot.get("description", snapshot.get("display_description")),
            force=_force(snapshot.get("force", False)), metadata=snapshot.get("metadata"))
        return {"snapshot": detail(created, extensions=False)}

    def _items(self) -> list[dict]:
        args = request.args
        limit = args.get("limit")
        if limit is not None and not limit.isdigit():
            raise exception.InvalidInput(reason=f"limit param must be an integer: {limit}")
        filters = {key: args[key] for key in ("name", "status", "volume_id") if key in args}
        all_tenants = args.get("all_tenants", "").lower() in _TRUE
        return self.volume_api.get_all_snapshots(
            g.context, all_tenants=all_tenants, filters=filters,
            limit=int(limit) if limit is not None else None, marker=args.get("marker"))

    @upstream(PATH, "SnapshotsController.index")
    def index(self) -> dict:
        return {"snapshots": [summary(s) for s in self._items()]}

    @upstream(PATH, "SnapshotsController.detail")
    def detail(self) -> dict:
        return {"snapshots": [detail(s) for s in self._items()]}

    @upstream(PATH, "SnapshotsController.show")
    def show(self, snapshot_id: str) -> dict:
        return {"snapshot": detail(self.volume_api.get_snapshot(g.context, snapshot_id))}

    @upstream(PATH, "SnapshotsController.delete")
    def delete(self, snapshot_id: str) -> None:
        snapshot = self.volume_api.get_snapshot(g.context, snapshot_id)
        self.volume_api.delete_snapshot(g.context, snapshot)


def register(app: Flask, controller: SnapshotsController) -> None:
    prefix = "/v3/<project_id>/snapshots"

    @app.post(prefix)
    @validation.schema(SNAPSHOT_CREATE)
    def create_snapshot(project_id):
        response = jsonify(controller.create(json_body()))
        response.status_code = 202
        return response

    @app.get(prefix)
    def list_snapshots(project_id):
        return jsonify(controller.index())

    @app.get(f"{prefix}/detail")
    def list_snapshots_detail(project_id):
        return jsonify(controller.detail())

    @app.get(f"{prefix}/<snapshot_id>")
    def show_snapshot(project_id, snapshot_id):
        return jsonify(controller.show(snapshot_id))

    @app.delete(f"{prefix}/<snapshot_id>")
    def delete_snapshot(project_id, snapshot_id):
        controller.delete(snapshot_id)
        return "", 202
