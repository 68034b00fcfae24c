"""View builders: turn instance and flavor rows into the API's JSON documents.

``status`` is derived from ``vm_state`` and ``task_state`` as in
``nova/api/openstack/common.py``; the ``OS-EXT-STS`` fields show the raw states.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from novalab.reference.nova.compute import task_states, vm_states

_STATE_MAP = {
    vm_states.ACTIVE: {"default": "ACTIVE"},
    vm_states.BUILDING: {"default": "BUILD"},
    vm_states.STOPPED: {"default": "SHUTOFF"},
    vm_states.PAUSED: {"default": "PAUSED"},
    vm_states.SUSPENDED: {"default": "SUSPENDED"},
    vm_states.ERROR: {"default": "ERROR"},
    vm_states.DELETED: {"default": "DELETED"},
    vm_states.SOFT_DELETED: {"default": "SOFT_DELETED"},
    vm_states.SHELVED: {"default": "SHELVED"},
    vm_states.SHELVED_OFFLOADED: {"default": "SHELVED_OFFLOADED"},
}


def status_from_state(vm_state: str, task_state: str | None = None) -> str:
    task_map = _STATE_MAP.get(vm_state, {"default": "UNKNOWN"})
    return task_map.get(task_state, task_map["default"])


def isotime(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _link(base: str, kind: str, ident: str) -> list[dict]:
    root = base.rsplit("/v2.1", 1)[0]
    return [{"rel": "self", "href": f"{base}/{kind}/{ident}"},
            {"rel": "bookmark", "href": f"{root}/{kind}/{ident}"}]


def server_summary(base: str, instance: dict) -> dict:
    return {"id": instance["uuid"], "name": instance["display_name"],
            "links": _link(base, "servers", instance["uuid"])}


def addresses(network_info: list | None) -> dict:
    """``addresses`` from the cached network info: fixed IPs per network label."""
    result: dict[str, list] = {}
    for vif in network_info or []:
        network = vif.get("network") or {}
        entries = result.setdefault(network.get("label") or network.get("id", "network"), [])
        for subnet in network.get("subnets", []):
            for ip in subnet.get("ips", []):
                entries.append({"version": ip.get("version", 4), "addr": ip["address"],
                                "OS-EXT-IPS:type": ip.get("type", "fixed"),
                                "OS-EXT-IPS-MAC:mac_addr": vif.get("address")})
    return result


def server_detail(base: str, instance: dict, fault: dict | None, *, is_admin: bool,
                  network_info: list | None = None, bdms: list | None = None) -> dict:
    host = instance.get("host")
    host_id = hashlib.sha224(f"{instance['project_id']}{host}".encode()).hexdigest() \
        if host else ""
    server = {
        "id": instance["uuid"],
        "name": instance["display_name"],
        "status": status_from_state(instance["vm_state"], instance["task_state"]),
        "tenant_id": instance["project_id"],
        "user_id": instance["user_id"],
        "metadata": instance.get("metadata") or {},
        "hostId": host_id,
        "image": {"id": instance["image_ref"], "links": _link(base, "images",
                                                               instance["image_ref"])}
        if instance.get("image_ref") else "",
        "flavor": {"id": instance["flavor_id"], "links": _link(base, "flavors",
                                                                instance["flavor_id"])},
        "created": isotime(instance["created_at"]),
        "updated": isotime(instance.get("updated_at") or instance["created_at"]),
        "addresses": addresses(network_info),
        "accessIPv4": "",
        "accessIPv6": "",
        "links": _link(base, "servers", instance["uuid"]),
        "OS-DCF:diskConfig": "MANUAL",
        "progress": 0,
        "OS-EXT-AZ:availability_zone": instance.get("availability_zone") or "nova",
        "config_drive": "",
        "key_name": instance.get("key_name"),
        "OS-SRV-USG:launched_at": _usage_time(instance.get("launched_at")),
        "OS-SRV-USG:terminated_at": _usage_time(instance.get("terminated_at")),
        "OS-EXT-STS:task_state": instance["task_state"],
        "OS-EXT-STS:vm_state": instance["vm_state"],
        "OS-EXT-STS:power_state": instance["power_state"],
        "os-extended-volumes:volumes_attached": [
            {"id": bdm["volume_id"]} for bdm in bdms or [] if bdm.get("volume_id")],
    }
    if is_admin:
        server.update({"OS-EXT-SRV-ATTR:host": host,
                       "OS-EXT-SRV-ATTR:hypervisor_hostname": instance.get("node"),
                       "OS-EXT-SRV-ATTR:instance_name": instance["name"]})
    if fault and instance["vm_state"] in (vm_states.ERROR, vm_states.DELETED):
        server["fault"] = {"code": fault["code"], "created": isotime(fault["created_at"]),
                           "message": fault["message"]}
        if is_admin or fault["code"] != 500:
            server["fault"]["details"] = fault.get("details") or ""
    if instance["task_state"] == task_states.DELETING:
        server["status"] = status_from_state(instance["vm_state"])
    return server


def _usage_time(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def flavor_view(base: str, flavor: dict, detail: bool) -> dict:
    view = {"id": flavor["flavorid"], "name": flavor["name"],
            "links": _link(base, "flavors", flavor["flavorid"]),
            "description": flavor.get("description")}
    if detail:
        view.update({"ram": flavor["memory_mb"], "disk": flavor["root_gb"],
                     "vcpus": flavor["vcpus"], "swap": flavor["swap"] or "",
                     "OS-FLV-EXT-DATA:ephemeral": flavor["ephemeral_gb"],
                     "OS-FLV-DISABLED:disabled": flavor["disabled"],
                     "os-flavor-access:is_public": flavor["is_public"],
                     "rxtx_factor": flavor["rxtx_factor"]})
    return view
