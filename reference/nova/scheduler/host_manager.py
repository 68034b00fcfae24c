"""The scheduler's picture of the cluster (``nova/scheduler/host_manager.py``).

``get_all_host_states`` reads three things from the database: which compute
services are alive and enabled, what each compute node has (the *cluster
state*), and what the instances placed on it already use. Nothing is cached
between requests, so two schedulers never disagree for long.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from novalab.reference.common.db import Database, utcnow
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import upstream

SERVICE_DOWN_TIME = timedelta(seconds=60)


@dataclass
class HostState:
    """Free and used resources of one compute node, as filters and weighers see them."""

    host: str
    nodename: str
    total_usable_ram_mb: int
    free_ram_mb: int
    total_usable_disk_gb: int
    free_disk_gb: int
    vcpus_total: int
    vcpus_used: int
    num_instances: int
    supported_instances: list = field(default_factory=list)
    service_up: bool = True
    service_disabled: bool = False
    ram_allocation_ratio: float = 1.5
    disk_allocation_ratio: float = 1.0
    cpu_allocation_ratio: float = 16.0

    def consume_from_request(self, flavor: dict) -> None:
        """Account for an instance placed here in this same request (multi-create)."""
        self.free_ram_mb -= flavor["memory_mb"]
        self.free_disk_gb -= flavor["root_gb"] + flavor.get("ephemeral_gb", 0)
        self.vcpus_used += flavor["vcpus"]
        self.num_instances += 1


def service_is_up(service: dict, now: datetime | None = None) -> bool:
    """The servicegroup DB driver's test: a heartbeat within ``service_down_time``."""
    if service.get("forced_down"):
        return False
    last = service.get("last_seen_up") or service.get("updated_at") or service.get("created_at")
    return last is not None and (now or utcnow()) - last <= SERVICE_DOWN_TIME


class HostManager:
    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    @upstream("nova/scheduler/host_manager.py", "HostManager.get_all_host_states")
    def get_all_host_states(self, context) -> list[HostState]:
        services = {s["host"]: s for s in db_api.service_get_all(self.db, binary="nova-compute")}
        nodes = db_api.compute_node_get_all(self.db)
        usage = db_api.host_usage(self.db)
        states = []
        for node in nodes:
            used = usage.get(node["host"], {"memory_mb": 0, "vcpus": 0, "disk_gb": 0,
                                             "instances": 0})
            service = services.get(node["host"])
            states.append(HostState(
                host=node["host"], nodename=node["hypervisor_hostname"],
                total_usable_ram_mb=node["memory_mb"],
                free_ram_mb=node["memory_mb"] - used["memory_mb"],
                total_usable_disk_gb=node["local_gb"],
                free_disk_gb=node["local_gb"] - used["disk_gb"],
                vcpus_total=node["vcpus"], vcpus_used=used["vcpus"],
                num_instances=used["instances"],
                supported_instances=node.get("supported_instances") or [],
                service_up=service is not None and service_is_up(service),
                service_disabled=bool(service and service["disabled"]),
                ram_allocation_ratio=node["ram_allocation_ratio"],
                disk_allocation_ratio=node["disk_allocation_ratio"],
                cpu_allocation_ratio=node["cpu_allocation_ratio"]))
        return states
