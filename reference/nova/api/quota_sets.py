"""``os-quota-sets`` and ``limits`` (``quota_sets.py``, ``limits.py``), by microversion.

``GET /os-quota-sets/{project_id}`` shows a project's limits (``/detail`` adds
what is in use), ``PUT`` sets them and ``DELETE`` returns them to the defaults
(admins only); ``GET /limits`` is what ``openstack limits show --absolute``
reads: the caller's limits and usage.

What each version shows, as upstream: below 2.36 also the nova-network era's
``fixed_ips``, ``floating_ips``, ``security_groups`` and ``security_group_rules``,
which Nova keeps "to avoid changing API responses" and answers as -1 (unlimited:
Nova does not count them; Neutron has its own quotas); below 2.39 ``limits`` also
has ``maxImageMeta`` (the metadata_items limit); from 2.57 the injected-file
(personality) quotas and limits are gone.
"""

from __future__ import annotations

from flask import g, jsonify, request

from novalab.reference.common import exception
from novalab.reference.common.quota import QuotaEngine
from novalab.reference.common.wsgi import json_body
from novalab.reference.nova import policy
from novalab.reference.nova.api import identity, versions
from novalab.reference.nova.api.schemas import quota_sets as schema
from novalab.reference.nova.api.schemas.parameter_types import is_true
from novalab.tracing.spans import upstream

_QUOTA_SETS = "nova/api/openstack/compute/quota_sets.py"
_checked = identity.verify_project_id


# Nova's deprecated nova-network quotas (AbsoluteResource with no default: -1).
NETWORK_QUOTAS = ("fixed_ips", "floating_ips", "security_groups", "security_group_rules")
INJECTED_FILE_QUOTAS = ("injected_files", "injected_file_content_bytes",
                        "injected_file_path_bytes")


def _shown(values: dict, wrap=None) -> dict:
    """The quota set for the request's version (FILTERED_QUOTAS_v236, _v257)."""
    shown = {name: value for name, value in values.items()
             if not (name in INJECTED_FILE_QUOTAS and versions.is_supported("2.57"))}
    if not versions.is_supported("2.36"):
        shown.update({name: wrap(-1) if wrap else -1 for name in NETWORK_QUOTAS})
    return shown


class QuotaSetsController:
    def __init__(self, quotas: QuotaEngine, tracer):
        self.quotas = quotas
        self.tracer = tracer

    def _view(self, project_id: str, detail: bool) -> dict:
        limits = self.quotas.limits(project_id)
        if not detail:
            return dict(_shown(limits), id=project_id)
        used = self.quotas.usages(project_id)
        return dict(_shown({name: {"limit": limit, "in_use": used.get(name, 0), "reserved": 0}
                            for name, limit in limits.items()},
                           wrap=lambda limit: {"limit": limit, "in_use": 0, "reserved": 0}),
                    id=project_id)

    @upstream(_QUOTA_SETS, "QuotaSetsController.show")
    def show(self, project_id: str):
        policy.authorize(g.context, "os_compute_api:os-quota-sets:show",
                         {"project_id": project_id})
        return jsonify({"quota_set": self._view(project_id, detail=False)})

    @upstream(_QUOTA_SETS, "QuotaSetsController.detail")
    def detail(self, project_id: str):
        policy.authorize(g.context, "os_compute_api:os-quota-sets:show",
                         {"project_id": project_id})
        return jsonify({"quota_set": self._view(project_id, detail=True)})

    @upstream(_QUOTA_SETS, "QuotaSetsController.defaults")
    def defaults(self, project_id: str):
        policy.authorize(g.context, "os_compute_api:os-quota-sets:defaults")
        return jsonify({"quota_set": dict(_shown(self.quotas.defaults), id=project_id)})

    @upstream(_QUOTA_SETS, "QuotaSetsController.update")
    def update(self, project_id: str):
        policy.authorize(g.context, "os_compute_api:os-quota-sets:update",
                         {"project_id": project_id})
        body = json_body()["quota_set"]  # checked against schema.update
        values = {k: int(v) for k, v in body.items() if k != "force"}
        if not is_true(body.get("force", False)):
            self._validate_quota_limits(_checked(project_id), values)
        limits = self.quotas.set_limits(_checked(project_id), values)
        return jsonify({"quota_set": _shown(limits)})

    def _validate_quota_limits(self, project_id: str, values: dict[str, int]) -> None:
        """``_validate_quota_limit``: not below what the project already uses, unless
        ``force`` (then the project simply cannot create more until it is under)."""
        used = self.quotas.usages(project_id, list(values))
        for resource, limit in values.items():
            if limit < -1:
                raise exception.ValidationError(
                    detail=f"Quota limit {limit} for {resource} must be -1 or greater.")
            if limit != -1 and limit < used[resource]:
                raise exception.ValidationError(
                    detail=f"Quota limit {limit} for {resource} must be greater than or "
                           f"equal to already used and reserved {used[resource]}.")

    @upstream(_QUOTA_SETS, "QuotaSetsController.delete")
    def delete(self, project_id: str):
        policy.authorize(g.context, "os_compute_api:os-quota-sets:delete",
                         {"project_id": project_id})
        self.quotas.delete_limits(_checked(project_id))
        return "", 202


# The absolute limits of limits.py, by the quota resource each reports.
_ABSOLUTE = {"maxTotalInstances": "instances", "maxTotalCores": "cores",
             "maxTotalRAMSize": "ram", "maxServerMeta": "metadata_items",
             "maxPersonality": "injected_files",
             "maxPersonalitySize": "injected_file_content_bytes",
             "maxTotalKeypairs": "key_pairs", "maxServerGroups": "server_groups",
             "maxServerGroupMembers": "server_group_members"}
_USED = {"totalInstancesUsed": "instances", "totalCoresUsed": "cores",
         "totalRAMUsed": "ram"}


class LimitsController:
    def __init__(self, quotas: QuotaEngine, tracer):
        self.quotas = quotas
        self.tracer = tracer

    @upstream("nova/api/openstack/compute/limits.py", "LimitsController.index")
    def index(self):
        context = g.context
        policy.authorize(context, "os_compute_api:limits")
        project_id = request.args.get("tenant_id") or context.project_id
        if project_id != context.project_id:
            policy.authorize(context, "os_compute_api:limits:other_project",
                             {"project_id": project_id})
        if not project_id:
            raise exception.Forbidden(action="os_compute_api:limits (no project scope)")
        limits = self.quotas.limits(project_id)
        used = self.quotas.usages(project_id, set(_USED.values()))
        absolute = {key: limits[name] for key, name in _ABSOLUTE.items()}
        absolute.update({key: used[name] for key, name in _USED.items()})
        absolute["totalServerGroupsUsed"] = 0  # novalab has no server groups
        if not versions.is_supported("2.39"):
            absolute["maxImageMeta"] = limits["metadata_items"]
        if not versions.is_supported("2.36"):
            # The nova-network era's limits, as Nova answers them: -1, never counted.
            absolute.update({"maxSecurityGroups": -1, "maxSecurityGroupRules": -1,
                             "maxTotalFloatingIps": -1, "totalSecurityGroupsUsed": 0,
                             "totalFloatingIpsUsed": 0})
        if versions.is_supported("2.57"):
            del absolute["maxPersonality"], absolute["maxPersonalitySize"]
        return jsonify({"limits": {"rate": [], "absolute": absolute}})


def register(app, quotas: QuotaEngine, tracer) -> None:
    sets, limits = QuotaSetsController(quotas, tracer), LimitsController(quotas, tracer)
    base = "/v2.1/os-quota-sets/<project_id>"
    app.add_url_rule(base, "quota_sets_show", sets.show, methods=["GET"])
    app.add_url_rule(f"{base}/detail", "quota_sets_detail", sets.detail, methods=["GET"])
    app.add_url_rule(f"{base}/defaults", "quota_sets_defaults", sets.defaults,
                     methods=["GET"])
    app.add_url_rule(base, "quota_sets_update",
                     versions.schemas(schema.UPDATE)(sets.update), methods=["PUT"])
    app.add_url_rule(base, "quota_sets_delete", sets.delete, methods=["DELETE"])
    app.add_url_rule("/v2.1/limits", "limits", limits.index, methods=["GET"])
