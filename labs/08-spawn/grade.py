"""Lab 08: the learner's guest, from its flavor to a running domain (steps 43-44).

The attempt draws the flavor. The answers are checked against the learner's own
server: the domain name Nova gave it (``OS-EXT-SRV-ATTR:instance_name``, as admin),
its port's MAC, its flavor's RAM (MiB, which libvirt counts in KiB), and spans of
their own boot: the libvirt call below ``LibvirtDriver._create_domain`` that came
before ``createWithFlags``, the conductor's save of the power state. ``domain.xml``
in their lab folder must be the domain XML nova-compute defined for their guest,
element for element (parsed and compared with the one it keeps).
"""

import xml.etree.ElementTree as ET

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

XML_FILE = "domain.xml"


def _server(ctx) -> dict:
    server = ctx.require_active(ctx.names["server"], "boot it (step 1 of the guide)")
    return server


def _defined_xml(ctx, server: dict) -> ET.Element:
    """The domain XML nova-compute defined for ``server`` (its ``libvirt.xml``)."""
    found = sorted(ctx.cloud.state_dir.glob(f"instances/*/{server['id']}/libvirt.xml"))
    if not found:
        raise Fail(f"nova-compute kept no libvirt.xml for {server['name']}")
    return ET.parse(found[0]).getroot()


def _canonical(root: ET.Element) -> str:
    return ET.canonicalize(ET.tostring(root, encoding="unicode"), strip_text=True)


def _instance_name(ctx) -> str:
    server = _server(ctx)
    return ctx.admin_api.get("compute", f"/servers/{server['id']}")["server"][
        "OS-EXT-SRV-ATTR:instance_name"]


def _flavor(ctx) -> dict:
    return ctx.api.get("compute", f"/flavors/{_server(ctx)['flavor']['id']}")["flavor"]


def _number(ctx, key: str) -> int:
    given = ctx.answer(key)
    digits = "".join(ch for ch in given if ch.isdigit())
    if not digits:
        raise Fail(f"{given!r} is not a number")
    return int(digits)


def _libvirt_calls_under(trace, name: str) -> list:
    """nova-compute's libvirt CLIENT spans below its spans called ``name``, in time order."""
    parents = [s for s in trace if s.service == "nova-compute" and s.name == name]
    calls = [c for p in parents for c in trace.descendants(p)
             if c.kind == "CLIENT" and c.get(attr.RPC_SYSTEM) == "libvirt"]
    return sorted(calls, key=lambda s: s.start_ns)


@check("{server} is ACTIVE, with the flavor this attempt drew")
def server_active(ctx):
    drawn = ctx.parameters.get("flavor")
    flavor = _flavor(ctx)
    if drawn and flavor["name"] != drawn:
        raise Fail(f"{ctx.names['server']} has the flavor {flavor['name']}; this attempt "
                   f"asks for {drawn} (step 1 of the guide): delete it and boot it again")


@check("the trace of your boot of {server} has steps 43 and 44, in order")
def spawn_steps(ctx):
    _server(ctx)
    result = ctx.flow(ctx.names["server"])
    for number in (44, 43):
        step = result.result(number)
        if not step.matched:
            raise Fail(f"step {number} is missing from your boot "
                       f"({step.excused or result.summary})")
        if step.out_of_order:
            raise Fail(f"step {number} is out of order in your boot")


@check(f"{XML_FILE} in your lab folder is the domain XML of {{server}}")
def domain_xml(ctx):
    path = ctx.workdir / XML_FILE
    if not path.exists():
        raise Fail(f"no {path}: copy your guest's libvirt.xml there (step 3)")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise Fail(f"{path.name} is not XML: {exc}") from exc
    server = _server(ctx)
    if root.tag != "domain" or root.findtext("uuid") != server["id"]:
        raise Fail(f"{path.name} is not the <domain> of {server['name']}: its <uuid> is "
                   "the server's id")
    if root.findtext("name") != _instance_name(ctx):
        raise Fail(f"{path.name} names another domain than the one Nova made for "
                   f"{server['name']}")
    if _canonical(root) != _canonical(_defined_xml(ctx, server)):
        raise Fail(f"{path.name} is not the XML nova-compute defined for {server['name']}, "
                   "element for element: copy its libvirt.xml as it is (step 3)")


@check("your guest's domain name (answer domain)")
def domain_name(ctx):
    given = ctx.answer("domain")
    if given != _instance_name(ctx):
        raise Fail(f"{given!r} is not the name of your guest's domain: read <name> in its "
                   "libvirt.xml (Nova's instance_name_template, from the instance's id)")


@check("the MAC of your guest's interface (answer mac)")
def mac(ctx):
    server = _server(ctx)
    macs = {m.get("address", "").lower() for m in _defined_xml(ctx, server).iter("mac")}
    ports = ctx.api.get("network", "/v2.0/ports", device_id=server["id"])["ports"]
    given = ctx.answer("mac").lower()
    if given not in macs:
        raise Fail(f"{given!r} is not the <mac address> of an interface in your guest's XML")
    if given not in {p["mac_address"].lower() for p in ports}:
        raise Fail(f"{given} is in the XML but no port of {server['name']} has it")


@check("the memory in your guest's XML, in KiB (answer memory-kib)")
def memory(ctx):
    given, flavor = _number(ctx, "memory-kib"), _flavor(ctx)
    if given != flavor["ram"] * 1024:
        hint = " (that is the flavor's MiB: libvirt counts KiB)" \
            if given == flavor["ram"] else ""
        raise Fail(f"{given} KiB is not the <memory> of your guest's domain{hint}: read its "
                   "unit in libvirt.xml")


@check("the libvirt call that defined your domain (answer define-span)")
def define_span(ctx):
    trace = ctx.boot(ctx.names["server"])
    calls = _libvirt_calls_under(trace, "LibvirtDriver._create_domain")
    methods = [str(c.get(attr.RPC_METHOD)) for c in calls]
    if "createWithFlags" not in methods:
        raise Fail("no createWithFlags below LibvirtDriver._create_domain in your boot")
    before = calls[:methods.index("createWithFlags")]
    given = ctx.answered_span("define-span", trace, f"your boot of {ctx.names['server']}")
    if not before or given.span_id != before[-1].span_id:
        raise Fail(f"{given.name} is not the libvirt call your trace shows just before "
                   "createWithFlags, below LibvirtDriver._create_domain")


@check("where Nova saved your guest's power state (answer power-span)")
def power_span(ctx):
    server = _server(ctx)
    trace = ctx.boot(ctx.names["server"])
    saves = [s for s in trace if s.service == "nova-conductor"
             and s.name.endswith("instance_update") and s.get(attr.NOVA_VM_STATE) == "active"
             and s.get(attr.NOVA_POWER_STATE) is not None]
    if not saves:
        raise Fail("your boot has no conductor's instance_update that saved it active")
    given = ctx.answered_span("power-span", trace, f"your boot of {server['name']}")
    if given.span_id not in {s.span_id for s in saves}:
        raise Fail(f"{given.service}'s {given.name} did not save your guest's power state: "
                   "find the conductor's instance_update whose nova.instance.power_state "
                   "is set (step 46)")
    if str(saves[-1].get(attr.NOVA_POWER_STATE)) != str(server["OS-EXT-STS:power_state"]):
        raise Fail(f"your trace shows the conductor saving power_state "
                   f"{saves[-1].get(attr.NOVA_POWER_STATE)}, not what the API shows now: was "
                   "the guest stopped since?")
