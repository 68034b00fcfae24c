"""The volumes resource (``cinder/api/v3/volumes.py``): create, list, show, delete.

``POST /v3/{project_id}/volumes`` answers 202 with the volume ``creating``: the
backend work runs later in cinder-volume and the client polls ``GET`` until
``available`` (or ``error``; ``GET /messages`` then says why).
"""

from __future__ import annotations

from flask import Flask, g, jsonify, request

from novalab.reference.cinder import exception
from novalab.reference.cinder.api import schemas, versions, views
from novalab.reference.common import exception as common_exception
from novalab.reference.common import validation
from novalab.reference.common.wsgi import json_body
from novalab.tracing.spans import upstream

PATH = "cinder/api/v3/volumes.py"
_TRUE, _FALSE = ("t", "true", "1"), ("f", "false", "0")


def _base() -> str:
    return request.host_url


def _bootable_filter(value: str) -> bool:
    """3.2 onwards only true/false values are accepted; before, anything not false is true."""
    lowered = value.lower()
    if versions.requested() >= versions.VOLUME_LIST_BOOTABLE:
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise exception.InvalidInput(reason=f"bootable={value}")
    return lowered not in ("false",)


class VolumeController:
    def __init__(self, volume_api, tracer):
        self.volume_api = volume_api
        self.tracer = tracer

    @upstream(PATH, "VolumeController.create")
    def create(self, body: dict):
        volume = dict(body["volume"])
        if volume.get("multiattach") not in (None, False, "false", "False"):
            raise common_exception.Invalid(
                "multiattach parameter has been removed. The default behavior is to use "
                "multiattach enabled volume types. Contact your administrator to create a "
                "multiattach enabled volume type and use it to create multiattach volumes.")
        for unsupported in ("snapshot_id", "source_volid", "backup_id", "group_id",
                            "consistencygroup_id"):
            if volume.get(unsupported):
                raise common_exception.Invalid(
                    f"{unsupported} is not supported by novalab's cinder.")
        image_ref = volume.get("imageRef", volume.get("image_id"))
        created = self.volume_api.create(
            g.context, volume.get("size"), volume.get("name", volume.get("display_name")),
            volume.get("description", volume.get("display_description")),
            image_id=image_ref or None, volume_type=volume.get("volume_type"),
            metadata=volume.get("metadata"),
            availability_zone=volume.get("availability_zone"))
        return {"volume": views.volume_detail(_base(), created, g.context, extensions=False)}

    def _items(self) -> list[dict]:
        args = request.args
        limit = args.get("limit")
        if limit is not None and (not limit.isdigit()):
            raise exception.InvalidInput(reason=f"limit param must be an integer: {limit}")
        filters = {}
        for key in ("name", "status"):
            if key in args:
                filters[key] = args[key]
        if "bootable" in args:
            filters["bootable"] = _bootable_filter(args["bootable"])
        all_tenants = args.get("all_tenants", "").lower() in ("1", "t", "true", "y", "yes", "on")
        return self.volume_api.get_all(g.context, all_tenants=all_tenants, filters=filters,
                                       limit=int(limit) if limit is not None else None,
                                       marker=args.get("marker"))

    @upstream(PATH, "VolumeController.index")
    def index(self):
        return {"volumes": [views.volume_summary(_base(), v) for v in self._items()]}

    @upstream(PATH, "VolumeController.detail")
    def detail(self):
        return {"volumes": [views.volume_detail(_base(), v, g.context) for v in self._items()]}

    @upstream(PATH, "VolumeController.show")
    def show(self, volume_id: str):
        volume = self.volume_api.get(g.context, volume_id)
        return {"volume": views.volume_detail(_base(), volume, g.context)}

    @upstream(PATH, "VolumeController.delete")
    def delete(self, volume_id: str) -> None:
        volume = self.volume_api.get(g.context, volume_id)
        self.volume_api.delete(g.context, volume)


def register(app: Flask, controller: VolumeController) -> None:
    prefix = "/v3/<project_id>/volumes"

    @app.post(prefix)
    @validation.schema(schemas.VOLUME_CREATE)
    def create_volume(project_id):
        response = jsonify(controller.create(json_body()))
        response.status_code = 202
        return response

    @app.get(prefix)
    def list_volumes(project_id):
        return jsonify(controller.index())

    @app.get(f"{prefix}/detail")
    def list_volumes_detail(project_id):
        return jsonify(controller.detail())

    @app.get(f"{prefix}/<volume_id>")
    def show_volume(project_id, volume_id):
        return jsonify(controller.show(volume_id))

    @app.delete(f"{prefix}/<volume_id>")
    def delete_volume(project_id, volume_id):
        controller.delete(volume_id)
        return "", 202
