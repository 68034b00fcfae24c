"""Lab 06: the learner's network, the port of their boot, and steps 26-38, 44 in its trace.

Every answer is checked against the learner's own boot: the time from step 26 to
step 30, the message id of step 34's CONSUMER span, the hosts-file lines on the DHCP agent's
span of step 30 (and the port's MAC and address from neutron's API), the event
nova-compute waited for (``nova.events``) and the port it names, and the tap of the
guest's interface in the domain XML nova-compute kept (``libvirt.xml``), the device
the L2 agent waited for in step 34.
"""

import xml.etree.ElementTree as ET

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

STEPS = (*range(26, 39), 44)
APPEARED = "device appeared"  # the L2 agent's event when the guest's tap exists


def _network(ctx) -> dict:
    name = ctx.names["network"]
    found = ctx.api.get("network", "/v2.0/networks", name=name)["networks"]
    if not found:
        raise Fail(f"no network named {name}: create it (step 1 of the guide)")
    if len(found) > 1:
        raise Fail(f"{len(found)} networks are named {name}: delete all but one")
    return found[0]


def _port(ctx) -> dict:
    """The one port of the learner's server (found through neutron, as Nova does)."""
    server = ctx.require_server(ctx.names["server"], "boot it (step 2)")
    ports = ctx.api.get("network", "/v2.0/ports", device_id=server["id"])["ports"]
    if len(ports) != 1:
        raise Fail(f"{server['name']} has {len(ports)} ports; boot it with one network "
                   f"(--network {ctx.names['network']})")
    return ports[0]


def _step(ctx, number: int):
    """The span of step ``number`` in the learner's boot (Fail if it is missing)."""
    step = ctx.flow(ctx.names["server"]).result(number)
    if not step.matched:
        raise Fail(f"step {number} is missing from the trace of your boot "
                   f"({step.excused or 'see `novalab flow check --server NAME`'})")
    return step.span


@check("{network} has the subnet {subnet}, in the range drawn for you, with DHCP on")
def network_and_subnet(ctx):
    network = _network(ctx)
    name = ctx.names["subnet"]
    subnets = ctx.api.get("network", "/v2.0/subnets", name=name)["subnets"]
    if not subnets:
        raise Fail(f"no subnet named {name}: `openstack subnet create --network "
                   f"{network['name']} --subnet-range CIDR {name}`")
    if subnets[0]["network_id"] != network["id"]:
        raise Fail(f"{name} is on another network, not on {network['name']}")
    drawn = f"192.168.{ctx.parameters.get('net')}.0/24"
    if subnets[0]["cidr"] != drawn:
        raise Fail(f"{name} is {subnets[0]['cidr']}, not {drawn}: delete it and "
                   "create it with the range your guide names (step 1)")
    if not subnets[0]["enable_dhcp"]:
        raise Fail(f"{name} has DHCP off: no DHCP agent would serve it (steps 27-33)")


@check("{server} is ACTIVE, its port ACTIVE on {network}")
def server_on_network(ctx):
    server = ctx.require_active(ctx.names["server"], "boot it (step 2)")
    port, network = _port(ctx), _network(ctx)
    if port["network_id"] != network["id"]:
        raise Fail(f"the port of {server['name']} is on another network: boot it with "
                   f"--network {network['name']}")
    if port["status"] != "ACTIVE":
        raise Fail(f"the port of {server['name']} is {port['status']}")


@check("your boot of {server}: steps 26-38 and 44, in order")
def port_steps(ctx):
    result = ctx.flow(ctx.names["server"])
    missing = [n for n in STEPS if not result.result(n).matched]
    if missing:
        raise Fail(f"missing from your boot: steps {missing} ({result.summary})")
    late = [n for n in STEPS if result.result(n).out_of_order]
    if late:
        raise Fail(f"out of order in your boot: steps {late}")
    network = _network(ctx)
    trace = result.trace
    created = [s for s in trace.descendants(result.result(26).span)
               if s.get(attr.NEUTRON_NETWORK_ID)]
    if not created or created[0].get(attr.NEUTRON_NETWORK_ID) != network["id"]:
        raise Fail(f"step 26 of this boot created a port on another network than "
                   f"{network['name']}: boot {ctx.names['server']} again on it")


@check("how long after step 26 dnsmasq was reloaded, step 30 (answer dhcp-ms)")
def dhcp_ms(ctx):
    result = ctx.flow(ctx.names["server"])
    created, reloaded = result.result(26), result.result(30)
    if not (created.matched and reloaded.matched):
        raise Fail("steps 26 and 30 must both be in your boot: `novalab flow check --server NAME`")
    gap = result.offset_ms(reloaded) - result.offset_ms(created)
    value = ctx.answer_ms("dhcp-ms")
    if abs(value - gap) > 0.01:
        raise Fail(f"{value:g} ms is not step 30's time minus step 26's in your boot: read "
                   "both (+N ms) in the flow check, to the microsecond")


@check("the message the L2 agent took at step 34 (answer l2-message)")
def l2_message(ctx):
    span = _step(ctx, 34)
    given = ctx.answer("l2-message")
    if given != span.get(attr.MESSAGING_MESSAGE_ID):
        raise Fail(f"{given!r} is not the id of the port_update message step 34 took: read "
                   "messaging.message.id on its CONSUMER span (step 28's PRODUCER, which "
                   "sent it, carries the same)")


@check("your port's line in dnsmasq's hosts file (answer dhcp-entry)")
def dhcp_entry(ctx):
    span = _step(ctx, 30)
    port, network = _port(ctx), _network(ctx)
    if span.get(attr.NEUTRON_NETWORK_ID) != network["id"]:
        raise Fail(f"step 30 of your boot reloaded the dnsmasq of another network than "
                   f"{network['name']}")
    entries = [str(e) for e in span.get(attr.NOVALAB_DNSMASQ_HOST_ENTRIES) or ()]
    if not entries:
        raise Fail("the dnsmasq span of step 30 lists no hosts: this cloud predates "
                   "novalab.dnsmasq.host_entries; start the lab again (`novalab lab stop`)")
    given = ctx.answer("dhcp-entry").replace(" ", "")
    if given not in entries:
        raise Fail(f"{given!r} is not a line dnsmasq was given in step 30: read "
                   f"{attr.NOVALAB_DNSMASQ_HOST_ENTRIES} on the `dnsmasq reload` span, or "
                   "the hosts file (step 4 of the guide)")
    mac, _name, ip = given.split(",")
    addresses = [f["ip_address"] for f in port["fixed_ips"]]
    if mac != port["mac_address"] or ip not in addresses:
        raise Fail(f"{given!r} is the line of another port of {network['name']}: yours "
                   "has the MAC and address `openstack port list --server NAME` shows")


@check("the event nova-compute waited for (answer vif-event)")
def vif_event(ctx):
    result = ctx.flow(ctx.names["server"])
    waits = [s for s in result.trace if s.service == "nova-compute" and s.get(attr.NOVA_EVENTS)]
    events = {str(e) for s in waits for e in s.get(attr.NOVA_EVENTS)}
    given = ctx.answer("vif-event")
    if given not in events:
        raise Fail(f"{given!r} is not an event nova-compute waited for in your boot: read "
                   f"{attr.NOVA_EVENTS} on ComputeVirtAPI.wait_for_instance_event")
    port = _port(ctx)
    if not given.endswith(port["id"]):
        raise Fail(f"{given!r} does not name the port of {ctx.names['server']}")
    active, told = _step(ctx, 37), _step(ctx, 38)
    if not active.start_ns <= told.start_ns:
        raise Fail("in your trace Nova was told (step 38) before the port was saved ACTIVE "
                   "(step 37)")


def _domain(ctx, server: dict):
    """The domain XML nova-compute defined for the server (kept beside its disk)."""
    found = sorted(ctx.cloud.state_dir.glob(f"instances/*/{server['id']}/libvirt.xml"))
    if not found:
        raise Fail(f"no libvirt.xml of {server['name']} in the cloud's instances folder")
    return ET.parse(found[0]).getroot()


@check("the tap of your guest's interface (answer tap)")
def tap(ctx):
    server = ctx.require_server(ctx.names["server"], "boot it (step 2)")
    port = _port(ctx)
    wired = {i.find("target").get("dev") for i in _domain(ctx, server).iter("interface")
             if i.find("mac") is not None and i.find("target") is not None
             and i.find("mac").get("address") == port["mac_address"]}
    given = ctx.answer("tap")
    if given not in wired:
        raise Fail(f"{given!r} is not the target of the interface with your port's MAC in "
                   f"the domain XML of {server['name']} (libvirt.xml, step 5 of the guide)")
    trace = ctx.flow(ctx.names["server"]).trace
    waited = [e for s in trace.descendants(_step(ctx, 34)) for e in s.events
              if e.name == APPEARED and e.attributes.get(attr.NEUTRON_PORT_ID) == port["id"]]
    if not waited:
        raise Fail("in your boot the L2 agent of step 34 never saw that device appear")
