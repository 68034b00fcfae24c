"""Nova's network API over Neutron (``nova/network/neutron.py``), compact.

nova-compute calls :meth:`API.allocate_for_instance` before it spawns a guest.
As upstream, that is two steps:

1. ``_create_port_minimal`` creates one port per network *as the user* (the
   user's token from the request context), with ``device_id`` = the instance;
2. ``_update_ports_for_instance`` then binds each port *as an admin*:
   ``binding:host_id`` = the compute host, ``device_owner`` = ``compute:<zone>``.
   Neutron's policy lets only admins and services set a binding, so this uses
   ``admin_token`` (a callable giving the nova service user's token); without
   one it falls back to the user's token, which works only for admin users.

The result is the instance's network info: a list of VIF dicts shaped like
``nova.network.model.VIF`` (``id``, ``address``, ``type``, ``devname`` =
``tap`` + port id, ``network`` with ``bridge`` = ``brq`` + network id and its
subnets, ``active``). The ports are created in the security groups the server
asked for (``_process_security_groups``: names or ids of the project's groups;
none, or only ``default``, leaves it to Neutron, which puts a port in its
project's default group). Left out: pre-existing ports in ``requested_networks``
(refused), QoS, SR-IOV, the info cache and floating IPs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import httpx

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.wsgi import REQUEST_ID_HEADER
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

NEUTRON = "nova/network/neutron.py"
NIC_NAME_LEN = 14
VIF_TYPE_BINDING_FAILED = "binding_failed"
VIF_TYPE_UNBOUND = "unbound"
DEVICE_OWNER_DHCP = "network:dhcp"


class NeutronClientException(exception.NovaLabException):
    msg_fmt = "Neutron error %(status)s: %(reason)s"


class NetworkNotFound(exception.NotFound):
    msg_fmt = "Network %(network_id)s could not be found."


class NetworkAmbiguous(exception.Conflict):
    msg_fmt = ("Multiple possible networks found, use a Network ID to be more specific.")


class UnableToAutoAllocateNetwork(exception.Invalid):
    msg_fmt = ("Unable to automatically allocate a network for project %(project_id)s: "
               "novalab's Neutron has no auto-allocated topology (see README.md, \"Left "
               "out, on purpose\").")


class NoMoreFixedIps(exception.NovaLabException):
    msg_fmt = "No fixed IP addresses available for network: %(net)s"


class SecurityGroupNotFound(exception.NotFound):
    msg_fmt = "Security group %(security_group_id)s not found."


class NoUniqueMatch(exception.Conflict):
    msg_fmt = "No Unique Match Found."


class PortBindingFailed(exception.NovaLabException):
    msg_fmt = ("Binding failed for port %(port_id)s, please check neutron logs for more "
               "information.")


class _Client:
    """The few neutronclient calls Nova makes, bound to one token."""

    def __init__(self, http: httpx.Client, endpoint: str, token: str | None,
                 global_request_id: str | None = None):
        self.http = http
        self.endpoint = endpoint.rstrip("/")
        self.headers = {"X-Auth-Token": token or ""}
        if global_request_id:  # neutronclient's global_request_id: neutron keeps it
            self.headers[REQUEST_ID_HEADER] = global_request_id

    def _request(self, method: str, path: str, **kwargs) -> dict:
        try:
            response = self.http.request(method, f"{self.endpoint}/v2.0{path}",
                                         headers=self.headers, **kwargs)
        except httpx.HTTPError as exc:
            raise NeutronClientException(status="unreachable", reason=str(exc)) from exc
        if response.status_code == 204:
            return {}
        if response.status_code >= 400:
            try:
                error = response.json().get("NeutronError", {})
            except ValueError:
                error = {}
            raise NeutronClientException(
                status=response.status_code, reason=error.get("message", response.text[:200]),
                error_type=error.get("type"))
        return response.json()

    def list(self, collection: str, **filters) -> list[dict]:
        params = [(k, v) for k, values in filters.items()
                  for v in (values if isinstance(values, (list, tuple)) else [values])]
        # The URL's words are hyphenated (/security-groups), the body's key is not.
        return self._request("GET", f"/{collection.replace('_', '-')}",
                             params=params)[collection]

    def show(self, resource: str, item_id: str) -> dict:
        return self._request("GET", f"/{resource.replace('_', '-')}s/{item_id}")[resource]

    def find_resourceid_by_name_or_id(self, resource: str, name_or_id: str,
                                      project_id: str | None = None) -> str:
        """neutronclient's ``neutronv20.find_resourceid_by_name_or_id``: the id of the one
        ``resource`` with that id, else with that name (in ``project_id``); 404 when
        none, 409 (``NeutronClientNoUniqueMatch``) when the name is not unique."""
        collection = f"{resource.replace('_', '-')}s"
        key = f"{resource}s"
        by_id = self._request("GET", f"/{collection}", params=[
            ("id", name_or_id), ("fields", "id")])[key]
        if by_id:
            return by_id[0]["id"]
        params = [("name", name_or_id), ("fields", "id")]
        if project_id:
            params.append(("tenant_id", project_id))
        by_name = self._request("GET", f"/{collection}", params=params)[key]
        if len(by_name) > 1:
            raise NeutronClientException(
                status=409, error_type="NeutronClientNoUniqueMatch",
                reason=f"Multiple {resource} matches found for name '{name_or_id}', use an "
                       "ID to be more specific.")
        if not by_name:
            raise NeutronClientException(
                status=404, reason=f"Unable to find {resource} with name or id "
                                   f"'{name_or_id}'")
        return by_name[0]["id"]

    def create_port(self, body: dict) -> dict:
        return self._request("POST", "/ports", json=body)["port"]

    def update_port(self, port_id: str, body: dict) -> dict:
        return self._request("PUT", f"/ports/{port_id}", json=body)["port"]

    def delete_port(self, port_id: str) -> None:
        self._request("DELETE", f"/ports/{port_id}")


def _ensure_no_port_binding_failure(port: dict) -> None:
    if port.get("binding:vif_type") == VIF_TYPE_BINDING_FAILED:
        raise PortBindingFailed(port_id=port["id"])


class API:
    """``nova.network.neutron.API``: allocate, describe and free an instance's ports."""

    def __init__(self, endpoint: str, http: httpx.Client, tracer,
                 admin_token: Callable[[], str] | None = None):
        self.endpoint = endpoint
        self.http = http
        self.tracer = tracer
        self.admin_token = admin_token

    def get_client(self, context: RequestContext, admin: bool = False) -> _Client:
        token = context.auth_token
        if (admin or not token) and self.admin_token is not None:
            token = self.admin_token()
        return _Client(self.http, self.endpoint, token, context.global_id)

    # Allocate ----------------------------------------------------------------------------

    @upstream(NEUTRON, "API.allocate_for_instance")
    def allocate_for_instance(self, context: RequestContext, instance: dict,
                              requested_networks: list[dict] | None = None,
                              bind_host_id: str | None = None) -> list[dict]:
        """Create and bind the instance's ports; return its network info (VIF dicts)."""
        if not instance.get("project_id"):
            raise exception.Invalid(f"empty project id for instance {instance['uuid']}")
        neutron = self.get_client(context)
        admin_client = self.get_client(context, admin=True)
        nets = self._validate_requested_network_ids(context, instance, neutron,
                                                    requested_networks)
        if not nets:
            LOG.debug("No network configured for %s", instance["uuid"])
            return []
        security_groups = self._clean_security_groups(requested_security_groups(instance))
        security_group_ids = self._process_security_groups(instance, neutron,
                                                           security_groups)
        created = self._create_ports_for_instance(context, instance, nets, neutron,
                                                  security_group_ids)
        try:
            self._update_ports_for_instance(context, instance, admin_client, created,
                                            bind_host_id)
        except Exception:
            self._delete_ports(neutron, instance, [p["id"] for p in created])
            raise
        return self.get_instance_nw_info(context, instance,
                                         port_ids=[p["id"] for p in created])

    @upstream(NEUTRON, "API._validate_requested_network_ids")
    def _validate_requested_network_ids(self, context, instance, neutron,
                                        requested_networks) -> list[dict]:
        requested = []
        auto_allocate = False
        for request in requested_networks or []:
            # NetworkRequest's special ids (2.37): "none" asks for no network at all,
            # "auto" for the one the project can use (Neutron's auto-allocated
            # topology where it has none, which novalab's Neutron does not offer).
            if request.get("network_id") == "none":
                return []
            if request.get("network_id") == "auto":
                auto_allocate = True
                continue
            if request.get("port") or request.get("port_id"):
                raise exception.Invalid("novalab does not attach pre-existing ports; "
                                        "request a network instead")
            net_id = request.get("uuid") or request.get("network_id")
            if net_id:
                requested.append((net_id, request.get("fixed_ip") or request.get("address")))
        nets = self._get_available_networks(context, instance["project_id"],
                                            [n for n, _ip in requested], neutron)
        if requested:
            by_id = {n["id"]: n for n in nets}
            for net_id, _ip in requested:
                if net_id not in by_id:
                    raise NetworkNotFound(network_id=net_id)
            return [dict(by_id[n], _fixed_ip=ip) for n, ip in requested]
        if len(nets) > 1:
            raise NetworkAmbiguous()
        if auto_allocate and not nets:
            raise exception.Invalid(
                f"Unable to automatically allocate a network for project "
                f"{instance['project_id']}: novalab's Neutron has no auto-allocated "
                "topology (see README.md, \"Left out, on purpose\").")
        return nets

    @upstream(NEUTRON, "API.validate_networks")
    def validate_networks(self, context, requested_networks) -> None:
        """Before the API answers: each network asked for exists for the caller (400
        otherwise); ``"auto"`` with none to use needs Neutron's auto-allocated
        topology, which novalab's Neutron does not load, so it is the 400 Nova answers
        when ``_can_auto_allocate_network`` is false; ``"none"`` asks for nothing."""
        requests = requested_networks or []
        if any(r.get("network_id") == "none" for r in requests):
            return
        neutron = self.get_client(context)
        net_ids = [r.get("uuid") or r.get("network_id") for r in requests
                   if r.get("network_id") != "auto" and (r.get("uuid") or r.get("network_id"))]
        if net_ids:
            found = {n["id"] for n in self._get_available_networks(
                context, context.project_id, net_ids, neutron)}
            for net_id in net_ids:
                if net_id not in found:
                    raise exception.Invalid(NetworkNotFound(network_id=net_id).format_message())
            return
        if any(r.get("network_id") == "auto" for r in requests) and not \
                self._get_available_networks(context, context.project_id, [], neutron):
            raise UnableToAutoAllocateNetwork(project_id=context.project_id)

    @upstream(NEUTRON, "API._get_available_networks")
    def _get_available_networks(self, context, project_id, net_ids, neutron) -> list[dict]:
        """The project's own networks plus the shared ones (or exactly ``net_ids``)."""
        if net_ids:
            return neutron.list("networks", id=net_ids)
        nets = neutron.list("networks", tenant_id=project_id, shared="false")
        return nets + neutron.list("networks", shared="true")

    @staticmethod
    def _clean_security_groups(security_groups: list[str]) -> list[str]:
        """Only ``default`` asked for is none asked for: Neutron puts a port there anyway."""
        return [] if not security_groups or security_groups == ["default"] \
            else security_groups

    @upstream(NEUTRON, "API._process_security_groups")
    def _process_security_groups(self, instance, neutron: _Client,
                                 security_groups: list[str]) -> list[str]:
        """The ids of the requested groups: each a name (first) or an id of one of the
        project's groups; a name two groups share is ambiguous."""
        if not security_groups:
            return []
        user_groups = neutron.list("security_groups", fields=["id", "name"],
                                   tenant_id=instance["project_id"])
        ids = []
        for requested in security_groups:
            names = [g["id"] for g in user_groups if g["name"] == requested]
            if len(names) > 1:
                raise NoUniqueMatch(f"Multiple security groups found matching "
                                    f"'{requested}'. Use an ID to be more specific.")
            uuid_match = [g["id"] for g in user_groups if g["id"] == requested]
            if not names and not uuid_match:
                raise SecurityGroupNotFound(security_group_id=requested)
            ids.append((names or uuid_match)[0])
        return ids

    @upstream(NEUTRON, "API._create_ports_for_instance")
    def _create_ports_for_instance(self, context, instance, nets, neutron,
                                   security_group_ids=()) -> list[dict]:
        created = []
        try:
            for network in nets:
                created.append(self._create_port_minimal(
                    context, neutron, instance, network["id"], network.get("_fixed_ip"),
                    list(security_group_ids)))
        except Exception:
            self._delete_ports(neutron, instance, [p["id"] for p in created])
            raise
        return created

    @upstream(NEUTRON, "API._create_port_minimal")
    def _create_port_minimal(self, context, port_client: _Client, instance: dict,
                             network_id: str, fixed_ip: str | None = None,
                             security_group_ids: list[str] | None = None) -> dict:
        body = {"port": {"device_id": instance["uuid"], "network_id": network_id,
                         "admin_state_up": True, "tenant_id": instance["project_id"]}}
        if fixed_ip:
            body["port"]["fixed_ips"] = [{"ip_address": str(fixed_ip)}]
        if security_group_ids:
            body["port"]["security_groups"] = security_group_ids
        try:
            port = port_client.create_port(body)
        except NeutronClientException as exc:
            if exc.kwargs.get("error_type") == "IpAddressGenerationFailure":
                raise NoMoreFixedIps(net=network_id) from exc
            if exc.kwargs.get("status") == 404:
                raise NetworkNotFound(network_id=network_id) from exc
            raise
        try:
            _ensure_no_port_binding_failure(port)
        except PortBindingFailed:
            port_client.delete_port(port["id"])
            raise
        return port

    @upstream(NEUTRON, "API._update_ports_for_instance")
    def _update_ports_for_instance(self, context, instance, admin_client, ports,
                                   bind_host_id) -> None:
        zone = f"compute:{instance.get('availability_zone') or 'nova'}"
        for port in ports:
            body = {"port": {"device_id": instance["uuid"], "device_owner": zone}}
            if bind_host_id:
                body["port"]["binding:host_id"] = bind_host_id
            self._update_port(admin_client, instance, port["id"], body)

    @upstream(NEUTRON, "API._update_port")
    def _update_port(self, port_client: _Client, instance, port_id: str, body: dict) -> dict:
        port = port_client.update_port(port_id, body)
        _ensure_no_port_binding_failure(port)
        return port

    # Describe ----------------------------------------------------------------------------

    @upstream(NEUTRON, "API.get_instance_nw_info")
    def get_instance_nw_info(self, context: RequestContext, instance: dict,
                             port_ids: list[str] | None = None) -> list[dict]:
        return self._build_network_info_model(context, instance, port_ids)

    @upstream(NEUTRON, "API._build_network_info_model")
    def _build_network_info_model(self, context, instance, port_ids=None) -> list[dict]:
        client = self.get_client(context, admin=True)
        ports = client.list("ports", device_id=instance["uuid"])
        if port_ids is not None:  # the order the caller asked for
            order = {pid: i for i, pid in enumerate(port_ids)}
            ports = sorted((p for p in ports if p["id"] in order), key=lambda p: order[p["id"]])
        if not ports:
            return []
        net_ids = sorted({p["network_id"] for p in ports})
        networks = {n["id"]: n for n in client.list("networks", id=net_ids)}
        subnets = {s["id"]: s for s in client.list("subnets", network_id=net_ids)}
        dhcp_ports = client.list("ports", network_id=net_ids, device_owner=DEVICE_OWNER_DHCP)
        dhcp_server = {ip["subnet_id"]: ip["ip_address"]
                       for p in dhcp_ports for ip in p["fixed_ips"]}
        return [self._build_vif_model(port, networks.get(port["network_id"], {}), subnets,
                                      dhcp_server) for port in ports]

    @staticmethod
    def _build_vif_model(port: dict, network: dict, subnets: dict, dhcp_server: dict) -> dict:
        vif_subnets = []
        for subnet_id in network.get("subnets", []):
            subnet = subnets.get(subnet_id)
            if subnet is None:
                continue
            ips = [{"address": ip["ip_address"], "type": "fixed", "version": 4, "meta": {},
                    "floating_ips": []}
                   for ip in port["fixed_ips"] if ip["subnet_id"] == subnet_id]
            meta = {"dhcp_server": dhcp_server[subnet_id]} \
                if subnet["enable_dhcp"] and subnet_id in dhcp_server else {}
            vif_subnets.append({
                "cidr": subnet["cidr"], "version": subnet["ip_version"], "ips": ips,
                "gateway": {"address": subnet["gateway_ip"], "type": "gateway", "version": 4,
                            "meta": {}},
                "dns": [{"address": a, "type": "dns", "version": 4, "meta": {}}
                        for a in subnet.get("dns_nameservers", [])],
                "routes": [], "meta": meta})
        return {
            "id": port["id"], "address": port["mac_address"],
            "type": port.get("binding:vif_type"), "details": port.get("binding:vif_details", {}),
            "devname": ("tap" + port["id"])[:NIC_NAME_LEN],
            "ovs_interfaceid": None, "qbh_params": None, "qbg_params": None,
            "active": port["status"] == "ACTIVE", "vnic_type": port.get("binding:vnic_type",
                                                                       "normal"),
            "profile": port.get("binding:profile", {}), "preserve_on_delete": False,
            "network": {"id": port["network_id"], "label": network.get("name"),
                        "bridge": ("brq" + port["network_id"])[:NIC_NAME_LEN],
                        "subnets": vif_subnets,
                        "meta": {"injected": False, "tenant_id": network.get("project_id"),
                                 "mtu": network.get("mtu")}},
        }

    # Move: shelve-offload and unshelve ------------------------------------------------------

    @upstream(NEUTRON, "API.unbind_ports")
    def unbind_ports(self, context: RequestContext, ports: list[str], detach: bool = True) -> None:
        """Take the ports off their host; they stay the instance's (``detach=False``).

        Shelve-offload keeps the ports, and so the server's addresses, while it has
        no host. Upstream sends ``binding:host_id: None``; novalab's Neutron takes
        the attribute as a string, so it sends "" (unbound either way: the port
        goes DOWN and the old host's L2 agent forgets it).
        """
        admin_client = self.get_client(context, admin=True)
        for port_id in ports:
            body: dict = {"binding:host_id": "", "binding:profile": {}}
            if detach:
                body.update(device_id="", device_owner="")
            try:
                admin_client.update_port(port_id, {"port": body})
            except NeutronClientException as exc:
                if exc.kwargs.get("status") != 404:
                    raise
                LOG.debug("Unable to unbind port %s as it no longer exists.", port_id)

    @upstream(NEUTRON, "API.setup_instance_network_on_host")
    def setup_instance_network_on_host(self, context: RequestContext, instance: dict,
                                       host: str) -> None:
        self._update_port_binding_for_instance(context, instance, host)

    @upstream(NEUTRON, "API._update_port_binding_for_instance")
    def _update_port_binding_for_instance(self, context, instance: dict, host: str) -> None:
        """Bind each of the instance's ports to ``host`` unless it is bound there already.

        The new binding makes Neutron wire the port on that host (its L2 agent), and
        the port's return to ACTIVE is the ``network-vif-plugged`` a spawn waits for.
        """
        admin_client = self.get_client(context, admin=True)
        zone = f"compute:{instance.get('availability_zone') or 'nova'}"
        failed = (VIF_TYPE_UNBOUND, VIF_TYPE_BINDING_FAILED)
        for port in admin_client.list("ports", device_id=instance["uuid"],
                                      tenant_id=instance["project_id"]):
            if port.get("binding:host_id") != host or port.get("binding:vif_type") in failed:
                self._update_port(admin_client, instance, port["id"], {"port": {
                    "binding:host_id": host, "device_owner": zone}})

    # Free --------------------------------------------------------------------------------

    @upstream(NEUTRON, "API.deallocate_for_instance")
    def deallocate_for_instance(self, context: RequestContext, instance: dict, **kwargs) -> None:
        """Delete every port of the instance (novalab creates them all, see the module doc)."""
        neutron = self.get_client(context)
        ports = neutron.list("ports", device_id=instance["uuid"])
        self._delete_ports(neutron, instance, [p["id"] for p in ports], raise_if_fail=True)

    @upstream(NEUTRON, "API._delete_ports")
    def _delete_ports(self, neutron: _Client, instance, ports: list[str],
                      raise_if_fail: bool = False) -> None:
        failed = None
        for port_id in ports:
            try:
                neutron.delete_port(port_id)
            except NeutronClientException as exc:
                if exc.kwargs.get("status") == 404:
                    LOG.warning("Port %s does not exist", port_id)
                else:
                    LOG.exception("Failed to delete port %s for instance %s", port_id,
                                  instance["uuid"])
                    failed = exc
        if failed is not None and raise_if_fail:
            raise failed


# The groups a server asked for, as they travel from nova-api to nova-compute.
SECURITY_GROUPS_SYSMETA = "security_groups"


def requested_security_groups(instance: dict) -> list[str]:
    """The groups (names or ids, ``default`` as such) asked for at create.

    Upstream keeps them as the instance's ``security_groups`` (the
    ``security_group_instance_association`` table) and hands them to the compute
    host in ``build_and_run_instance``; novalab keeps them in the instance's
    system metadata, which reaches the host with the instance."""
    value = (instance.get("system_metadata") or {}).get(SECURITY_GROUPS_SYSMETA)
    return json.loads(value) if value else []
