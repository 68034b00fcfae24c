"""Quota sets and absolute limits (``cinder/api/contrib/quotas.py``, ``cinder/api/v3/limits.py``).

``GET /v3/{project_id}/os-quota-sets/{target}`` shows a project's limits (with
``?usage=true`` each as ``{"limit", "in_use", "reserved", "allocated"}``),
``.../defaults`` the defaults, ``PUT`` sets some (admins only), ``DELETE``
returns the project to the defaults. ``GET /v3/{project_id}/limits`` is what
``openstack limits show --absolute`` reads: the caller's limits and usage under
Nova-era names (``maxTotalVolumes``, ``totalGigabytesUsed`` ...). These are the
calls behind ``openstack quota show``, ``quota set --volumes N`` and ``quota delete``.
"""

from __future__ import annotations

import re

from flask import Flask, g, jsonify, request

from novalab.reference.cinder import policy
from novalab.reference.cinder.api import schemas
from novalab.reference.common import exception, validation
from novalab.reference.common.quota import QuotaEngine
from novalab.reference.common.wsgi import json_body
from novalab.tracing.spans import upstream

PATH = "cinder/api/contrib/quotas.py"
_PROJECT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TRUE = ("1", "t", "true", "y", "yes", "on")

# limits' absolute names for each quota resource: (maximum, used).
ABSOLUTE = {
    "volumes": ("maxTotalVolumes", "totalVolumesUsed"),
    "gigabytes": ("maxTotalVolumeGigabytes", "totalGigabytesUsed"),
    "snapshots": ("maxTotalSnapshots", "totalSnapshotsUsed"),
    "backups": ("maxTotalBackups", "totalBackupsUsed"),
    "backup_gigabytes": ("maxTotalBackupGigabytes", "totalBackupGigabytesUsed"),
}


def _target(project_id: str) -> str:
    if not _PROJECT_ID.match(project_id):
        raise exception.Invalid(f"Invalid project id {project_id[:80]!r}.")
    return project_id


class QuotaSetsController:
    def __init__(self, quotas: QuotaEngine, tracer):
        self.quotas = quotas
        self.tracer = tracer

    def _quota_set(self, project_id: str, usage: bool) -> dict:
        limits = self.quotas.limits(project_id)
        if not usage:
            return dict(limits)
        used = self.quotas.usages(project_id)
        return {name: {"limit": limit, "in_use": used.get(name, 0), "reserved": 0,
                       "allocated": 0} for name, limit in limits.items()}

    @upstream(PATH, "QuotaSetsController.show")
    def show(self, project_id: str) -> dict:
        project_id = _target(project_id)
        policy.authorize(g.context, "volume_extension:quotas:show", {"project_id": project_id})
        usage = request.args.get("usage", "").lower() in _TRUE
        return {"quota_set": {"id": project_id, **self._quota_set(project_id, usage)}}

    @upstream(PATH, "QuotaSetsController.defaults")
    def defaults(self, project_id: str) -> dict:
        project_id = _target(project_id)
        policy.authorize(g.context, "volume_extension:quotas:show", {"project_id": project_id})
        return {"quota_set": {"id": project_id, **self.quotas.defaults}}

    @upstream(PATH, "QuotaSetsController.update")
    def update(self, project_id: str, body: dict) -> dict:
        project_id = _target(project_id)
        policy.authorize(g.context, "volume_extension:quotas:update",
                         {"project_id": project_id})
        values = {name: int(value) for name, value in body["quota_set"].items()
                  if name != "skip_validation"}
        return {"quota_set": self.quotas.set_limits(project_id, values)}

    @upstream(PATH, "QuotaSetsController.delete")
    def delete(self, project_id: str) -> None:
        project_id = _target(project_id)
        policy.authorize(g.context, "volume_extension:quotas:delete",
                         {"project_id": project_id})
        self.quotas.delete_limits(project_id)

    @upstream("cinder/api/v3/limits.py", "LimitsController.index")
    def limits(self) -> dict:
        project_id = g.context.project_id
        policy.authorize(g.context, "limits_extension:used_limits",
                         {"project_id": project_id})
        limits = self.quotas.limits(project_id)
        used = self.quotas.usages(project_id)
        absolute = {}
        for resource, (maximum, in_use) in ABSOLUTE.items():
            absolute[maximum] = limits[resource]
            absolute[in_use] = used.get(resource, 0)
        return {"limits": {"rate": [], "absolute": absolute}}


def register(app: Flask, controller: QuotaSetsController) -> None:
    prefix = "/v3/<project_id>/os-quota-sets/<target_id>"

    @app.get(prefix)
    def show_quota_set(project_id, target_id):
        return jsonify(controller.show(target_id))

    @app.get(f"{prefix}/defaults")
    def show_quota_defaults(project_id, target_id):
        return jsonify(controller.defaults(target_id))

    @app.put(prefix)
    @validation.schema(schemas.QUOTA_UPDATE)
    def update_quota_set(project_id, target_id):
        return jsonify(controller.update(target_id, json_body()))

    @app.delete(prefix)
    def delete_quota_set(project_id, target_id):
        controller.delete(target_id)
        return "", 200

    @app.get("/v3/<project_id>/limits")
    def show_limits(project_id):
        return jsonify(controller.limits())
