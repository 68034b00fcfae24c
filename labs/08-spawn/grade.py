"""Lab 08: the learner's guest, from its flavor to a running domain (steps 43-44).

The answers are checked against the learner's own server: the domain name Nova
gave it (``OS-EXT-SRV-ATTR:instance_name``, as admin), its flavor (vCPUs, RAM in
MiB, which libvirt counts in KiB), the power state Nova saved (the API, and the
conductor's span of the save in their trace), and the libvirt call below
``LibvirtDriver._create_domain`` that came before ``createWithFlags`` in their trace.
``domain.xml`` in their lab folder must be their guest's domain XML.
"""

import xml.etree.ElementTree as ET

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

XML_FILE = "domain.xml"


def _server(ctx) -> dict:
    server = ctx.require_active(ctx.names["server"], "boot it (step 1 of the guide)")
    return server


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


@check("{server} is ACTIVE")
def server_active(ctx):
    _server(ctx)


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


@check("your guest's domain name (answer domain)")
def domain_name(ctx):
    given = ctx.answer("domain")
    if given != _instance_name(ctx):
        raise Fail(f"{given!r} is not the name of your guest's domain: read <name> in its "
                   "libvirt.xml (Nova's instance_name_template, from the instance's id)")


@check("the vCPUs in your guest's XML (answer vcpus)")
def vcpus(ctx):
    given, flavor = _number(ctx, "vcpus"), _flavor(ctx)
    if given != flavor["vcpus"]:
        raise Fail(f"{given} is not the <vcpu> count Nova wrote for {ctx.names['server']}: "
                   "read it in libvirt.xml, and compare with the flavor")


@check("the memory in your guest's XML, in KiB (answer memory-kib)")
def memory(ctx):
    given, flavor = _number(ctx, "memory-kib"), _flavor(ctx)
    if given != flavor["ram"] * 1024:
        hint = " (that is the flavor's MiB: libvirt counts KiB)" \
            if given == flavor["ram"] else ""
        raise Fail(f"{given} KiB is not the <memory> of your guest's domain{hint}: read its "
                   "unit in libvirt.xml")


@check("the libvirt call that defined your domain (answer define-call)")
def define_call(ctx):
    given = ctx.answer("define-call").removeprefix("libvirt.").strip()
    trace = ctx.boot(ctx.names["server"])
    calls = _libvirt_calls_under(trace, "LibvirtDriver._create_domain")
    methods = [str(c.get(attr.RPC_METHOD)) for c in calls]
    if "createWithFlags" not in methods:
        raise Fail("no createWithFlags below LibvirtDriver._create_domain in your boot")
    before = methods[:methods.index("createWithFlags")]
    if not before or given.lower() != before[-1].lower():
        raise Fail(f"{given!r} is not the libvirt call your trace shows just before "
                   "createWithFlags, below LibvirtDriver._create_domain")


@check("the power_state Nova saved (answer power-state)")
def power_state(ctx):
    given = ctx.answer("power-state").strip()
    if not given.isdigit():
        raise Fail(f"{given!r} is a word: Nova stores a number (the CLI prints it as a word; "
                   "`-f value -c OS-EXT-STS:power_state` does not)")
    server = _server(ctx)
    saved = server["OS-EXT-STS:power_state"]
    if given != str(saved):
        raise Fail(f"{given!r} is not the power_state Nova saved for {server['name']}: the "
                   "number in OS-EXT-STS:power_state, or nova.instance.power_state on the "
                   "conductor's instance_update in your trace (step 46)")
    trace = ctx.boot(ctx.names["server"])
    recorded = [s.get(attr.NOVA_POWER_STATE) for s in trace
                if s.service == "nova-conductor" and s.name.endswith("instance_update")
                and s.get(attr.NOVA_VM_STATE) == "active"]
    if recorded and str(recorded[-1]) != given:
        raise Fail(f"your trace shows the conductor saving power_state {recorded[-1]}, "
                   "not what the API shows now: was the guest stopped since?")
