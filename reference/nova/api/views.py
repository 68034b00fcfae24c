"""View builders: turn instance and flavor rows into the API's JSON documents.

``status`` is derived from ``vm_state`` and ``task_state`` as in
``nova/api/openstack/common.py``; the ``OS-EXT-STS`` fields show the raw states.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from novalab.reference.nova.api import versions
from novalab.reference.nova.availability_zones import get_instance_availability_zone
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


# The statuses whose server view shows ``progress`` (``ViewBuilder._progress_statuses``).
_PROGRESS_STATUSES = ("ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING")


def host_status(instance: dict, services: dict[str, dict], is_up) -> str:
    """``compute_api.get_instance_host_status`` (2.16): the state of the server's host as
    its nova-compute service row tells it; "" for a server no host has."""
    service = services.get(instance.get("host") or "")
    if service is None:
        return ""
    if service.get("forced_down"):
        return "DOWN"
    if service.get("disabled"):
        return "MAINTENANCE"
    return "UP" if is_up(service) else "UNKNOWN"


def _flavor(base: str, instance: dict, show_extra_specs: bool) -> dict:
    """The server's flavor: a link to it (2.1), or from 2.47 what it was at boot."""
    if not versions.is_supported("2.47"):
        return {"id": instance["flavor_id"], "links": _link(base, "flavors",
                                                             instance["flavor_id"])}
    flavor = instance.get("flavor") or {}
    view = {"vcpus": instance["vcpus"], "ram": instance["memory_mb"],
            "disk": instance["root_gb"], "ephemeral": instance["ephemeral_gb"],
            "swap": flavor.get("swap") or 0,
            "original_name": flavor.get("name") or instance["flavor_name"]}
    if show_extra_specs:
        view["extra_specs"] = dict(flavor.get("extra_specs") or {})
    return view


def server_detail(base: str, instance: dict, fault: dict | None, *, is_admin: bool,
                  network_info: list | None = None, bdms: list | None = None,
                  show_extra_specs: bool = False, host_status: str | None = None) -> dict:
    """``ViewBuilder.show`` for the negotiated microversion: every field the version has
    and no other. ``is_admin`` is the extended-attributes policy's answer,
    ``host_status`` is None where the host-status policy hides it."""
    host = instance.get("host")
    host_id = hashlib.sha224(f"{instance['project_id']}{host}".encode()).hexdigest() \
        if host else ""
    status = status_from_state(instance["vm_state"], instance["task_state"])
    if instance["task_state"] == task_states.DELETING:
        status = status_from_state(instance["vm_state"])
    server = {
        "id": instance["uuid"],
        "name": instance["display_name"],
        "status": status,
        "tenant_id": instance["project_id"],
        "user_id": instance["user_id"],
        "metadata": instance.get("metadata") or {},
        "hostId": host_id,
        "image": {"id": instance["image_ref"], "links": _link(base, "images",
                                                               instance["image_ref"])}
        if instance.get("image_ref") else "",
        "flavor": _flavor(base, instance, show_extra_specs),
        "created": isotime(instance["created_at"]),
        "updated": isotime(instance.get("updated_at") or instance["created_at"]),
        "addresses": addresses(network_info),
        "accessIPv4": "",
        "accessIPv6": "",
        "links": _link(base, "servers", instance["uuid"]),
        "OS-DCF:diskConfig": "MANUAL",
        "OS-EXT-AZ:availability_zone": get_instance_availability_zone(instance),
        "config_drive": "",
        "key_name": instance.get("key_name"),
        "OS-SRV-USG:launched_at": _usage_time(instance.get("launched_at")),
        "OS-SRV-USG:terminated_at": _usage_time(instance.get("terminated_at")),
        "OS-EXT-STS:task_state": instance["task_state"],
        "OS-EXT-STS:vm_state": instance["vm_state"],
        "OS-EXT-STS:power_state": instance["power_state"],
    }
    if status in _PROGRESS_STATUSES:
        server["progress"] = 0
    if fault and status in ("ERROR", "DELETED"):
        server["fault"] = {"code": fault["code"], "created": isotime(fault["created_at"]),
                           "message": fault["message"]}
        if is_admin or fault["code"] != 500:
            server["fault"]["details"] = fault.get("details") or ""
    volumes = [b for b in bdms or [] if b.get("volume_id")]
    if versions.is_supported("2.3"):
        server["os-extended-volumes:volumes_attached"] = [
            {"id": b["volume_id"], "delete_on_termination": bool(b["delete_on_termination"])}
            for b in volumes]
    else:
        server["os-extended-volumes:volumes_attached"] = [{"id": b["volume_id"]}
                                                          for b in volumes]
    if is_admin:
        server.update({"OS-EXT-SRV-ATTR:host": host,
                       "OS-EXT-SRV-ATTR:hypervisor_hostname": instance.get("node"),
                       "OS-EXT-SRV-ATTR:instance_name": instance["name"]})
        if versions.is_supported("2.3"):
            server.update({
                "OS-EXT-SRV-ATTR:hostname": instance.get("hostname") or "",
                "OS-EXT-SRV-ATTR:kernel_id": instance.get("kernel_id"),
                "OS-EXT-SRV-ATTR:launch_index": instance.get("launch_index") or 0,
                "OS-EXT-SRV-ATTR:ramdisk_id": instance.get("ramdisk_id"),
                "OS-EXT-SRV-ATTR:reservation_id": instance.get("reservation_id"),
                "OS-EXT-SRV-ATTR:root_device_name": instance.get("root_device_name"),
                "OS-EXT-SRV-ATTR:user_data": instance.get("user_data")})
    if versions.is_supported("2.9"):
        server["locked"] = bool(instance.get("locked_by"))
    if versions.is_supported("2.16") and host_status is not None:
        server["host_status"] = host_status
    if versions.is_supported("2.19"):
        server["description"] = instance.get("display_description")
    if versions.is_supported("2.26"):
        server["tags"] = list(instance.get("tags") or [])
    return server


def server_update(base: str, instance: dict, *, network_info: list | None,
                  show_extra_specs: bool) -> dict:
    """The answer to ``PUT /servers/{id}`` below 2.75: the show view without the
    extended attributes, availability zone, config drive, key name, usage, states
    and volumes, its addresses without the OS-EXT-IPS keys (``ServersController.update``
    passes ``show_*=False`` and ``extend_address=False``)."""
    view = server_detail(base, instance, None, is_admin=False, network_info=network_info,
                         show_extra_specs=show_extra_specs)
    view["addresses"] = {label: [{"version": ip["version"], "addr": ip["addr"]}
                                 for ip in ips]
                         for label, ips in view["addresses"].items()}
    for key in ("OS-EXT-AZ:availability_zone", "config_drive", "key_name",
                "OS-SRV-USG:launched_at", "OS-SRV-USG:terminated_at",
                "OS-EXT-STS:task_state", "OS-EXT-STS:vm_state", "OS-EXT-STS:power_state",
                "os-extended-volumes:volumes_attached"):
        view.pop(key, None)
    return view


def _usage_time(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def flavor_view(base: str, flavor: dict, detail: bool, *,
                show_extra_specs: bool = False) -> dict:
    """``views/flavors.py`` for the negotiated microversion: ``description`` from 2.55,
    ``extra_specs`` (where policy lets the caller read them) from 2.61."""
    view = {"id": flavor["flavorid"], "name": flavor["name"],
            "links": _link(base, "flavors", flavor["flavorid"])}
    if detail:
        view.update({"ram": flavor["memory_mb"], "disk": flavor["root_gb"],
                     "vcpus": flavor["vcpus"], "swap": flavor["swap"] or "",
                     "OS-FLV-EXT-DATA:ephemeral": flavor["ephemeral_gb"],
                     "OS-FLV-DISABLED:disabled": flavor["disabled"],
                     "os-flavor-access:is_public": flavor["is_public"],
                     "rxtx_factor": flavor["rxtx_factor"]})
    if versions.is_supported("2.55"):
        view["description"] = flavor.get("description")
    if show_extra_specs and versions.is_supported("2.61"):
        view["extra_specs"] = dict(flavor.get("extra_specs") or {})
    return view
