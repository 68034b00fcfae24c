"""``os-hypervisors`` (``nova/api/openstack/compute/hypervisors.py``): the compute nodes.

What each compute host's resource tracker last saved (``compute_nodes``: the
libvirt driver's capacity, the usage of the instances placed there), with the
state of the host's nova-compute service: **up** or **down** from its heartbeat
(``servicegroup``), **enabled** or **disabled** as ``os-services`` set it.
Admins only. By microversion:

* 2.1: ``GET /os-hypervisors`` (id, name, state, status), ``/detail`` and
  ``/{id}`` (capacity and usage), ``/statistics`` (the sums), and the searches
  ``/{pattern}/search`` and ``/{pattern}/servers``;
* 2.28: ``cpu_info`` is a JSON object, not a string;
* 2.33: the lists page (``limit``, ``marker``, a ``next`` link);
* 2.53: ids are the nodes' and services' uuids; the searches become query
  parameters (``hypervisor_hostname_pattern``, ``with_servers``) and their routes go.

``/{id}/uptime`` answers 501: novalab's compute hosts do not run ``uptime``.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

from flask import g, jsonify, request

from novalab.reference.common import exception
from novalab.reference.nova import policy
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.keypairs import MAX_LIMIT, _validated_query
from novalab.reference.nova.api.schemas import admin_views as schema
from novalab.reference.nova.api.schemas.parameter_types import is_true
from novalab.reference.nova.compute.utils import compute_node_uuid
from novalab.reference.nova.db import api as db_api
from novalab.reference.nova.servicegroup import service_is_up
from novalab.tracing.spans import upstream

_HYPERVISORS = "nova/api/openstack/compute/hypervisors.py"
POLICY = "os_compute_api:os-hypervisors:%s"
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{12}$")
# What counts as work in progress on a host (``Stats.calculate_workload``).
_WORKLOAD_STATES = ("resize_migrating", "rebuilding", "resize_prep", "image_snapshot",
                    "image_backup", "rescuing", "unshelving")


def node_uuid(node: dict) -> str:
    """The node's uuid: its resource provider's (``compute_node_uuid``)."""
    return compute_node_uuid(node["hypervisor_hostname"])


class HypervisorsController:
    def __init__(self, db, tracer):
        self.db = db
        self.tracer = tracer

    # What the database holds ------------------------------------------------------------

    def _nodes(self) -> list[dict]:
        """Every live node, with what the host's instances add to it."""
        nodes = db_api.compute_node_get_all(self.db)
        for node in nodes:
            node["uuid"] = node_uuid(node)
        return nodes

    def _services(self) -> dict[str, dict]:
        return {s["host"]: s for s in db_api.service_get_all(self.db, "nova-compute")}

    def _workload(self, host: str) -> int:
        return sum(1 for i in db_api.instance_get_all(self.db, host=host)
                   if i["task_state"] in _WORKLOAD_STATES)

    def _servers(self, host: str) -> list[dict]:
        """``instance_get_all_by_host``: the host's live instances, oldest first."""
        return list(reversed(db_api.instance_get_all(self.db, host=host)))

    def _search(self, pattern: str) -> list[dict]:
        """``compute_node_search_by_hypervisor``: a substring of the name; 404 if none."""
        found = [n for n in self._nodes() if pattern in n["hypervisor_hostname"]]
        if not found:
            raise exception.NotFound(f"No hypervisor matching '{pattern[:255]}' could be found.")
        return found

    # The view ---------------------------------------------------------------------------

    def _view(self, node: dict, service: dict, detail: bool, servers=None,
              with_servers=False) -> dict:
        """``_view_hypervisor``."""
        uuid_for_id = versions.is_supported("2.53")
        body = {"id": node["uuid"] if uuid_for_id else node["id"],
                "hypervisor_hostname": node["hypervisor_hostname"],
                "state": "up" if service_is_up(service) else "down",
                "status": "disabled" if service["disabled"] else "enabled"}
        if detail:
            body.update(
                hypervisor_type=node["hypervisor_type"],
                hypervisor_version=node["hypervisor_version"],
                host_ip=None,  # compute_nodes has no host_ip column (docs/decisions.md)
                service={"id": service["uuid"] if uuid_for_id else service["id"],
                         "host": node["host"],
                         "disabled_reason": service["disabled_reason"]})
            for field in ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used",
                          "local_gb_used", "running_vms"):
                body[field] = node[field]
            body["free_ram_mb"] = node["memory_mb"] - node["memory_mb_used"]
            body["free_disk_gb"] = node["local_gb"] - node["local_gb_used"]
            body["current_workload"] = self._workload(node["host"])
            body["disk_available_least"] = None  # not kept either (docs/decisions.md)
            cpu_info = node["cpu_info"] or ""
            body["cpu_info"] = (json.loads(cpu_info) if cpu_info else {}) \
                if versions.is_supported("2.28") else cpu_info
        if servers:
            body["servers"] = [{"name": s["name"], "uuid": s["uuid"]} for s in servers]
        return body

    def _get_hypervisors(self, detail: bool, query: dict, paged: bool) -> dict:
        """``_get_hypervisors``: all nodes, or those matching the 2.53 pattern."""
        pattern = with_servers = None
        if versions.is_supported("2.53"):
            pattern = query.get("hypervisor_hostname_pattern", [None])[0]
            with_servers = is_true(query.get("with_servers", [False])[0])
        limit, marker = (self._limit_and_marker(query) if paged else (None, None))
        if pattern is not None:
            if "limit" in query or marker:
                raise exception.Invalid("Paging over hypervisors with the "
                                        "hypervisor_hostname_pattern query parameter is "
                                        "not supported.")
            nodes, paged = self._search(pattern), False
        else:
            nodes = self._page(self._nodes(), limit, marker)
        services = self._services()
        listed = []
        for node in nodes:
            service = services.get(node["host"])
            if service is None:  # the service was deleted; its node is left over
                continue
            servers = self._servers(node["host"]) if with_servers else None
            listed.append(self._view(node, service, detail, servers, with_servers))
        body = {"hypervisors": listed}
        if paged and limit and len(listed) == limit:
            path = "os-hypervisors/detail" if detail else "os-hypervisors"
            body["hypervisors_links"] = [{"rel": "next", "href": _next_link(
                path, listed[-1]["id"])}]
        return body

    @staticmethod
    def _limit_and_marker(query: dict) -> tuple[int, str | None]:
        """``common.get_limit_and_marker``: the last value of each; max_limit at most."""
        limit = min(MAX_LIMIT, int(query["limit"][-1])) if "limit" in query else MAX_LIMIT
        return limit, (query["marker"][-1] if "marker" in query else None)

    @staticmethod
    def _page(nodes: list[dict], limit: int | None, marker: str | None) -> list[dict]:
        """``compute_node_get_all(limit, marker)``: by id, after the marker's node."""
        if marker is not None:
            key = "uuid" if versions.is_supported("2.53") else "id"
            ids = [str(n[key]) for n in nodes]
            if marker not in ids:
                raise exception.Invalid(f"marker [{marker[:255]}] not found")
            nodes = nodes[ids.index(marker) + 1:]
        return nodes[:limit] if limit is not None else nodes

    def _find(self, hypervisor_id: str) -> dict:
        """The node of ``id``: a uuid from 2.53 (400 if not one), an integer before (404)."""
        if versions.is_supported("2.53"):
            if not _UUID.match(hypervisor_id):
                raise exception.Invalid(f"Invalid uuid {hypervisor_id[:255]}")
            key, value = "uuid", hypervisor_id.lower()
        else:
            key, value = "id", hypervisor_id
        for node in self._nodes():
            if str(node[key]) == value:
                return node
        raise exception.NotFound(f"Hypervisor with ID '{hypervisor_id[:255]}' could not "
                                 "be found.")

    # The handlers -----------------------------------------------------------------------

    @upstream(_HYPERVISORS, "HypervisorsController.index")
    def index(self):
        query = _validated_query(schema.HYPERVISORS_INDEX_QUERY)
        policy.authorize(g.context, POLICY % "list", {})
        return jsonify(self._get_hypervisors(False, query, versions.is_supported("2.33")))

    @upstream(_HYPERVISORS, "HypervisorsController.detail")
    def detail(self):
        query = _validated_query(schema.HYPERVISORS_INDEX_QUERY)
        policy.authorize(g.context, POLICY % "list-detail", {})
        return jsonify(self._get_hypervisors(True, query, versions.is_supported("2.33")))

    @upstream(_HYPERVISORS, "HypervisorsController.show")
    def show(self, hypervisor_id: str):
        query = _validated_query(schema.HYPERVISORS_SHOW_QUERY)
        with_servers = versions.is_supported("2.53") and \
            is_true(query.get("with_servers", [False])[0])
        policy.authorize(g.context, POLICY % "show", {})
        node = self._find(hypervisor_id)
        service = self._services().get(node["host"])
        if service is None:
            raise exception.NotFound(f"Hypervisor with ID '{hypervisor_id}' could not be "
                                     "found.")
        servers = self._servers(node["host"]) if with_servers else None
        return jsonify({"hypervisor": self._view(node, service, True, servers, with_servers)})

    @upstream(_HYPERVISORS, "HypervisorsController.uptime")
    def uptime(self, hypervisor_id: str):
        policy.authorize(g.context, POLICY % "uptime", {})
        self._find(hypervisor_id)
        # common.raise_feature_not_supported: the driver has no get_host_uptime here.
        raise _NotImplemented()

    @upstream(_HYPERVISORS, "HypervisorsController.search")
    def search(self, pattern: str):
        _below_2_53()
        policy.authorize(g.context, POLICY % "search", {})
        services = self._services()
        return jsonify({"hypervisors": [self._view(n, services[n["host"]], False)
                                        for n in self._search(pattern)
                                        if n["host"] in services]})

    @upstream(_HYPERVISORS, "HypervisorsController.servers")
    def servers(self, pattern: str):
        _below_2_53()
        policy.authorize(g.context, POLICY % "servers", {})
        services = self._services()
        return jsonify({"hypervisors": [
            self._view(n, services[n["host"]], False, self._servers(n["host"]))
            for n in self._search(pattern) if n["host"] in services]})

    @upstream(_HYPERVISORS, "HypervisorsController.statistics")
    def statistics(self):
        """``compute_node_statistics``: the sums over the nodes of enabled services."""
        policy.authorize(g.context, POLICY % "statistics", {})
        services = self._services()
        nodes = [n for n in self._nodes()
                 if n["host"] in services and not services[n["host"]]["disabled"]]
        stats = {"count": len(nodes)}
        for field in ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used",
                      "local_gb_used", "running_vms"):
            stats[field] = sum(n[field] for n in nodes)
        stats["free_ram_mb"] = stats["memory_mb"] - stats["memory_mb_used"]
        stats["free_disk_gb"] = stats["local_gb"] - stats["local_gb_used"]
        stats["current_workload"] = sum(self._workload(n["host"]) for n in nodes)
        stats["disk_available_least"] = None
        return jsonify({"hypervisor_statistics": stats})


class _NotImplemented(exception.NovaLabException):
    code = 501
    msg_fmt = "Feature not supported"  # nova's HTTPNotImplemented explanation


def _below_2_53() -> None:
    """``@wsgi.api_version('2.1', '2.52')``: at 2.53 the route is gone (404)."""
    if versions.is_supported("2.53"):
        raise exception.NotFound("The resource could not be found.")


def _next_link(path: str, marker) -> str:
    """``ViewBuilder.get_links``: this request's parameters with the last item as marker."""
    params = dict(sorted(request.args.items(multi=True)))
    params["marker"] = marker
    return f"{request.host_url.rstrip('/')}/v2.1/{path}?{urlencode(params)}"


def register(app, db, tracer) -> None:
    controller = HypervisorsController(db, tracer)
    base = "/v2.1/os-hypervisors"
    app.add_url_rule(base, "hypervisors_index", controller.index)
    app.add_url_rule(f"{base}/detail", "hypervisors_detail", controller.detail)
    app.add_url_rule(f"{base}/statistics", "hypervisors_statistics", controller.statistics)
    app.add_url_rule(f"{base}/<hypervisor_id>", "hypervisors_show", controller.show)
    app.add_url_rule(f"{base}/<hypervisor_id>/uptime", "hypervisors_uptime",
                     controller.uptime)
    app.add_url_rule(f"{base}/<pattern>/search", "hypervisors_search", controller.search)
    app.add_url_rule(f"{base}/<pattern>/servers", "hypervisors_servers", controller.servers)
