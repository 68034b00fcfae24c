"""``os-simple-tenant-usage`` (``nova/api/openstack/compute/simple_tenant_usage.py``).

What each project's servers used over a period (``start`` to ``end``, default
now): the hours each ran, between its ``launched_at`` and its
``terminated_at`` (or the period's end), times its flavor's vCPUs, memory and
disk. Deleted servers count for the time they ran: the window query reads
deleted rows too. ``GET /os-simple-tenant-usage`` is every project's (admins;
``detailed=1`` adds each server), ``/{project_id}`` one project's, which its
readers may see. From 2.40 both page by server (``limit``, ``marker``: an
instance uuid) with a ``next`` link. ``openstack usage list`` and ``usage show``.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from flask import g, jsonify, request

from novalab.reference.common import exception
from novalab.reference.common.db import utcnow
from novalab.reference.nova import exception as nova_exception
from novalab.reference.nova import policy
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.keypairs import MAX_LIMIT, _time, _validated_query
from novalab.reference.nova.api.schemas import admin_views as schema
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import upstream

_USAGE = "nova/api/openstack/compute/simple_tenant_usage.py"
POLICY = "os_compute_api:os-simple-tenant-usage:%s"
_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")


def _hours_for(instance: dict, start: datetime, stop: datetime) -> float:
    """``_hours_for``: the part of [start, stop] the instance ran in, in hours."""
    launched, terminated = instance["launched_at"], instance["terminated_at"]
    if terminated is not None and terminated < start:
        return 0
    if launched is None or launched > stop:
        return 0
    end = min(stop, terminated) if terminated is not None else stop
    return (end - max(launched, start)).total_seconds() / 3600.0


def _parse_datetime(value: str | None) -> datetime:
    """``_parse_datetime``: now when absent; one of Nova's three formats, naive UTC."""
    if not value:
        return utcnow()
    for fmt in _FORMATS:
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise exception.Invalid("Invalid input received: Datetime is in invalid format")


class SimpleTenantUsageController:
    def __init__(self, db, tracer):
        self.db = db
        self.tracer = tracer

    def _period(self, query: dict) -> tuple[datetime, datetime, bool]:
        """``_parse_qs_params``: each parameter's first value (``parse_qs``)."""
        start = _parse_datetime(query.get("start", [None])[0])
        stop = _parse_datetime(query.get("end", [None])[0])
        if not start < stop:
            raise exception.Invalid("Invalid start time. The start time cannot occur after "
                                    "the end time.")
        return start, min(stop, utcnow()), query.get("detailed", ["0"])[0] == "1"

    def _usages(self, start: datetime, stop: datetime, project_id=None, detailed=True,
                limit=None, marker=None) -> tuple[list[dict], list[dict]]:
        """``_tenant_usages_for_period``: per project sums, and every server's usage."""
        try:
            instances = db_api.instance_get_active_by_window(
                self.db, start, stop, project_id=project_id, limit=limit, marker=marker)
        except nova_exception.MarkerNotFound as exc:
            raise exception.Invalid(exc.format_message()) from exc
        summaries: dict[str, dict] = {}
        servers = []
        now = utcnow()
        for instance in instances:
            info = {"hours": _hours_for(instance, start, stop),
                    "flavor": instance["flavor_name"] or "",
                    "instance_id": instance["uuid"], "name": instance["display_name"],
                    "tenant_id": instance["project_id"],
                    "memory_mb": instance["memory_mb"],
                    "local_gb": instance["root_gb"] + (instance["ephemeral_gb"] or 0),
                    "vcpus": instance["vcpus"],
                    "started_at": _time(instance["launched_at"]),
                    "ended_at": _time(instance["terminated_at"])}
            ended = instance["terminated_at"]
            info["state"] = "terminated" if ended else instance["vm_state"]
            info["uptime"] = int(((ended or now) - instance["launched_at"]).total_seconds())
            summary = summaries.get(info["tenant_id"])
            if summary is None:
                summary = summaries[info["tenant_id"]] = {
                    "tenant_id": info["tenant_id"], "total_local_gb_usage": 0,
                    "total_vcpus_usage": 0, "total_memory_mb_usage": 0, "total_hours": 0,
                    "start": _time(start), "stop": _time(stop)}
                if detailed:
                    summary["server_usages"] = []
            summary["total_local_gb_usage"] += info["local_gb"] * info["hours"]
            summary["total_vcpus_usage"] += info["vcpus"] * info["hours"]
            summary["total_memory_mb_usage"] += info["memory_mb"] * info["hours"]
            summary["total_hours"] += info["hours"]
            servers.append(info)
            if detailed:
                summary["server_usages"].append(info)
        return list(summaries.values()), servers

    @staticmethod
    def _paging(query: dict) -> tuple[int, str | None]:
        if not versions.is_supported("2.40"):
            return MAX_LIMIT, None
        limit = min(MAX_LIMIT, int(query["limit"][-1])) if "limit" in query else MAX_LIMIT
        return limit, (query["marker"][-1] if "marker" in query else None)

    @staticmethod
    def _links(servers: list[dict], limit: int, path: str) -> list[dict] | None:
        """``usages.ViewBuilder.get_links``: a next page when this one is full."""
        if not versions.is_supported("2.40") or not servers or len(servers) != limit:
            return None
        params = dict(sorted(request.args.items(multi=True)))
        params["marker"] = servers[-1]["instance_id"]
        return [{"rel": "next",
                 "href": f"{request.host_url.rstrip('/')}/v2.1/{path}?{urlencode(params)}"}]

    @upstream(_USAGE, "SimpleTenantUsageController.index")
    def index(self):
        query = _validated_query(schema.USAGE_INDEX_QUERY)
        policy.authorize(g.context, POLICY % "list")
        start, stop, detailed = self._period(query)
        limit, marker = self._paging(query)
        usages, servers = self._usages(start, stop, detailed=detailed, limit=limit,
                                       marker=marker)
        body = {"tenant_usages": usages}
        links = self._links(servers, limit, "os-simple-tenant-usage")
        if links:
            body["tenant_usages_links"] = links
        return jsonify(body)

    @upstream(_USAGE, "SimpleTenantUsageController.show")
    def show(self, tenant_id: str):
        query = _validated_query(schema.USAGE_SHOW_QUERY)
        policy.authorize(g.context, POLICY % "show", {"project_id": tenant_id})
        start, stop, _detailed = self._period(query)
        limit, marker = self._paging(query)
        usages, servers = self._usages(start, stop, project_id=tenant_id, detailed=True,
                                       limit=limit, marker=marker)
        body = {"tenant_usage": usages[0] if usages else {}}
        links = self._links(servers, limit, f"os-simple-tenant-usage/{tenant_id}")
        if links:
            body["tenant_usage_links"] = links
        return jsonify(body)


def register(app, db, tracer) -> None:
    controller = SimpleTenantUsageController(db, tracer)
    app.add_url_rule("/v2.1/os-simple-tenant-usage", "simple_tenant_usage_index",
                     controller.index)
    app.add_url_rule("/v2.1/os-simple-tenant-usage/<tenant_id>", "simple_tenant_usage_show",
                     controller.show)
