"""Nova's network API against a running neutron: allocate, describe, deallocate."""

from __future__ import annotations

import uuid

import pytest

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.nova.network import neutron

HOST = "compute-1"


@pytest.fixture
def nova(netcloud):
    """The API as nova-compute holds it, with the nova service user for admin calls."""
    w = netcloud.w
    auth = w.auth("nova-compute", "nova")
    tracer = w.tracer("nova-compute", HOST)
    api = neutron.API(w.urls["neutron"], w.http("nova-compute", HOST), tracer,
                      admin_token=auth.service_token)
    token = netcloud.token("demo")
    body = netcloud.keystone.validate_token(token, include_catalog=False)
    context = RequestContext(user_id=body["user"]["id"], project_id=body["project"]["id"],
                             roles=["member"], auth_token=token)
    instance = {"uuid": str(uuid.uuid4()), "project_id": context.project_id,
                "availability_zone": None}
    return api, context, instance, tracer


def test_allocate_for_instance_creates_binds_and_describes(netcloud, nova):
    api, context, instance, tracer = nova
    with tracer.start_as_current_span("ComputeManager._build_resources") as outer:
        nw_info = api.allocate_for_instance(context, instance, None, bind_host_id=HOST)
    assert len(nw_info) == 1
    vif = nw_info[0]
    admin = netcloud.token("admin")
    port = netcloud.request("GET", f"/ports/{vif['id']}", admin).json()["port"]
    assert port["device_id"] == instance["uuid"]
    assert port["device_owner"] == "compute:nova"
    assert port["binding:host_id"] == HOST and port["tenant_id"] == context.project_id
    assert vif["address"] == port["mac_address"] and vif["type"] == "bridge"
    assert vif["devname"] == "tap" + port["id"][:11]
    network = vif["network"]
    assert network["label"] == "private" and network["bridge"] == "brq" + port["network_id"][:11]
    subnet = network["subnets"][0]
    assert subnet["cidr"] == "10.0.0.0/24" and subnet["meta"] == {"dhcp_server": "10.0.0.2"}
    assert subnet["ips"][0]["address"] == port["fixed_ips"][0]["ip_address"]
    assert subnet["gateway"]["address"] == "10.0.0.1"

    # Neutron wires it once the guest's tap exists, and tells nova; describing it
    # again shows it active.
    netcloud.start_guest(vif["id"])
    netcloud.nova.wait_for(lambda e: e["tag"] == vif["id"])
    assert api.get_instance_nw_info(context, instance)[0]["active"] is True

    # The port's creation ran as the user, its binding as the nova service user,
    # both inside the compute host's span.
    spans = netcloud.spans(outer.get_span_context().trace_id)
    names = [s.name for s in spans]
    for name in ("API.allocate_for_instance", "API._create_port_minimal",
                 "API._update_ports_for_instance", "Ml2Plugin.create_port",
                 "Ml2Plugin.update_port"):
        assert name in names, name


def test_deallocate_deletes_the_ports(netcloud, nova):
    api, context, instance, _tracer = nova
    vif = api.allocate_for_instance(context, instance, [{"uuid": netcloud.request(
        "GET", "/networks?name=private", context.auth_token).json()["networks"][0]["id"]}],
        bind_host_id=HOST)[0]
    api.deallocate_for_instance(context, instance)
    admin = netcloud.token("admin")
    assert netcloud.request("GET", f"/ports/{vif['id']}", admin).status_code == 404
    assert api.get_instance_nw_info(context, instance) == []


def test_unknown_network_is_refused(netcloud, nova):
    api, context, instance, _tracer = nova
    with pytest.raises(neutron.NetworkNotFound):
        api.allocate_for_instance(context, instance, [{"uuid": str(uuid.uuid4())}], HOST)
    with pytest.raises(exception.Invalid):
        api.allocate_for_instance(context, instance, [{"port": str(uuid.uuid4())}], HOST)


def test_failed_binding_leaves_no_port(netcloud, nova):
    """Without admin credentials the user may not bind: nova cleans up its port."""
    _api, context, instance, tracer = nova
    api = neutron.API(netcloud.w.urls["neutron"], netcloud.http, tracer)  # no admin_token
    with pytest.raises(neutron.NeutronClientException, match="403"):
        api.allocate_for_instance(context, instance, None, bind_host_id=HOST)
    admin = netcloud.token("admin")
    assert netcloud.request("GET", f"/ports?device_id={instance['uuid']}",
                            admin).json()["ports"] == []


def test_binding_failure_on_a_host_without_agent(netcloud, nova):
    api, context, instance, _tracer = nova
    with pytest.raises(neutron.PortBindingFailed):
        api.allocate_for_instance(context, instance, None, bind_host_id="compute-99")
    admin = netcloud.token("admin")
    assert netcloud.request("GET", f"/ports?device_id={instance['uuid']}",
                            admin).json()["ports"] == []
