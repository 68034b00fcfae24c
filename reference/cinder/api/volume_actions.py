"""Volume actions (``cinder/api/contrib/volume_actions.py``): ``POST .../volumes/{id}/action``.

The two Nova sends around a detach: ``os-begin_detaching`` (``in-use`` ->
``detaching``, so nothing else takes the volume while the host unplugs it;
a volume not attached is a 400) and ``os-roll_detaching`` (``detaching`` ->
``in-use`` again, when the detach failed). Both answer 202 with no body. Any
other action is a 400 that says novalab does not implement it.
"""

from __future__ import annotations

from flask import Flask, g

from novalab.reference.cinder import exception, policy
from novalab.reference.cinder.db import api as db_api
from novalab.reference.common import exception as common_exception
from novalab.reference.common import validation
from novalab.reference.common.wsgi import json_body
from novalab.tracing.spans import upstream

PATH = "cinder/api/contrib/volume_actions.py"
_API = "cinder/volume/api.py"

# One action per body; each takes an empty object (or null).
VOLUME_ACTION = {
    "type": "object",
    "properties": {name: {"type": ["null", "object"], "maxProperties": 0}
                   for name in ("os-begin_detaching", "os-roll_detaching")},
    "minProperties": 1,
    "maxProperties": 1,
    "propertyNames": {"maxLength": 255},
}


class VolumeActionsController:
    def __init__(self, db, volume_api, tracer):
        self.db = db
        self.volume_api = volume_api
        self.tracer = tracer

    @upstream(PATH, "VolumeActionsController._begin_detaching")
    def begin_detaching(self, volume_id: str) -> None:
        volume = self.volume_api.get(g.context, volume_id)
        policy.authorize(g.context, "volume_extension:volume_actions:begin_detaching", volume)
        self._begin_detaching(volume)

    @upstream(_API, "API.begin_detaching")
    def _begin_detaching(self, volume: dict) -> None:
        if not db_api.volume_conditional_update(
                self.db, volume["id"], {"status": "detaching"},
                {"status": "in-use", "attach_status": db_api.ATTACHED}):
            raise exception.InvalidVolume(
                reason="Unable to detach volume. Volume status must be 'in-use' and "
                       "attach_status must be 'attached' to detach.")

    @upstream(PATH, "VolumeActionsController._roll_detaching")
    def roll_detaching(self, volume_id: str) -> None:
        volume = self.volume_api.get(g.context, volume_id)
        policy.authorize(g.context, "volume_extension:volume_actions:roll_detaching", volume)
        db_api.volume_conditional_update(self.db, volume["id"], {"status": "in-use"},
                                         {"status": "detaching"})


def register(app: Flask, controller: VolumeActionsController) -> None:
    @app.post("/v3/<project_id>/volumes/<volume_id>/action")
    @validation.schema(VOLUME_ACTION)
    def volume_action(project_id, volume_id):
        body = json_body()
        if "os-begin_detaching" in body:
            controller.begin_detaching(volume_id)
        elif "os-roll_detaching" in body:
            controller.roll_detaching(volume_id)
        else:
            raise common_exception.Invalid(
                f"There is no such action: {', '.join(body)} (novalab's cinder implements "
                "os-begin_detaching and os-roll_detaching; see README.md, \"Left out, on "
                "purpose\").")
        return "", 202
