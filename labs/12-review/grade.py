"""Lab 12: one boot to a spec, and the whole trace explained.

The spec is checked through the APIs (nova's server, neutron's port, cinder's
volume and its attachment) and through the metadata service, as the guest
reads it (its user data, through neutron-metadata-proxy, compared byte for byte
with the learner's file). The flow check of the boot must be clean. Each answer
is a value only the learner's own boot gives (span ids, the event's port): the
span the flow check matched for the step the question describes, or the span
where nova-compute recorded it. The attempt draws the spec's address, volume size
and property value, so no two learners boot the same server.
"""

import re

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

FLAVOR = "m1.tiny"
IMAGE = "cirros"
NETWORK = "private"
PROPERTY = "purpose"
USER_DATA = "user-data.yaml"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _spec(ctx) -> tuple[str, int, str]:
    """This attempt's fixed address, volume size (GB) and property value."""
    values = ctx.parameters
    return (f"10.0.0.{values.get('octet', 50)}", int(values.get("size", 1)),
            str(values.get("purpose", "review")))


def _server(ctx) -> dict:
    return ctx.require_server(ctx.names["server"], "boot it to the spec (step 2 of the guide)")


def _step(ctx, number: int):
    step = ctx.flow(ctx.names["server"]).result(number)
    if not step.matched:
        raise Fail(f"step {number} is missing from the trace of your boot"
                   + (f" ({step.excused})" if step.excused else ""))
    return step.span


def _port(ctx, server: dict) -> dict:
    ports = ctx.api.get("network", "/v2.0/ports", device_id=server["id"])["ports"]
    if len(ports) != 1:
        raise Fail(f"{server['name']} has {len(ports)} ports; the spec asks for one, on "
                   f"{NETWORK}")
    return ports[0]


def _volume(ctx, server: dict) -> dict:
    attached = [v["id"] for v in server.get("os-extended-volumes:volumes_attached") or ()]
    if len(attached) != 1:
        raise Fail(f"{server['name']} has {len(attached)} volumes attached; the spec asks for "
                   "one blank volume")
    return ctx.api.get("volumev3", f"/volumes/{attached[0]}")["volume"]


@check("{server} is ACTIVE, booted from cirros with the flavor m1.tiny")
def active_to_spec(ctx):
    server = ctx.require_active(ctx.names["server"], "boot it to the spec (step 2 of the "
                                "guide)")
    flavor = ctx.api.get("compute", f"/flavors/{server['flavor']['id']}")["flavor"]
    if flavor["name"] != FLAVOR:
        raise Fail(f"{server['name']} has the flavor {flavor['name']}; the spec says {FLAVOR}")
    image_id = (server.get("image") or {}).get("id")
    image = ctx.api.get("image", f"/v2/images/{image_id}") if image_id else {}
    if image.get("name") != IMAGE:
        raise Fail(f"{server['name']} was not booted from the image {IMAGE}")


@check(f"{{server}} has the address the attempt drew, on {NETWORK}")
def fixed_address(ctx):
    fixed_ip = _spec(ctx)[0]
    server = _server(ctx)
    port = _port(ctx, server)
    networks = ctx.api.get("network", "/v2.0/networks", name=NETWORK)["networks"]
    if not networks or port["network_id"] != networks[0]["id"]:
        raise Fail(f"the port of {server['name']} is not on {NETWORK}")
    addresses = [f["ip_address"] for f in port["fixed_ips"]]
    if fixed_ip not in addresses:
        raise Fail(f"the port of {server['name']} has {', '.join(addresses)}, not {fixed_ip}: "
                   "ask for the address when you boot (`--nic net-id=...,v4-fixed-ip=...`)")


@check("a blank volume of the size the attempt drew is attached to {server}")
def blank_volume(ctx):
    size = _spec(ctx)[1]
    server = _server(ctx)
    volume = _volume(ctx, server)
    if volume["size"] != size:
        raise Fail(f"the volume of {server['name']} has {volume['size']} GB; the spec says "
                   f"{size}")
    if str(volume.get("bootable")).lower() == "true" or volume.get("volume_image_metadata"):
        raise Fail(f"the volume of {server['name']} was made from an image; the spec asks for "
                   "a blank one (source_type=blank)")
    if not any(a.get("server_id") == server["id"] for a in volume.get("attachments") or ()):
        raise Fail(f"cinder does not show the volume attached to {server['name']}")


@check(f"{{server}} has the property {PROPERTY} the attempt drew")
def has_property(ctx):
    server = _server(ctx)
    key, value = PROPERTY, _spec(ctx)[2]
    if server.get("metadata", {}).get(key) != value:
        raise Fail(f"{server['name']}'s properties are {server.get('metadata') or 'none'}: "
                   f"boot it with --property {key}={value}")


@check(f"the guest of {{server}} reads {USER_DATA} of your lab folder as its user data")
def user_data(ctx):
    path = ctx.workdir / USER_DATA
    if not path.exists():
        raise Fail(f"no {path}: write your user data there (step 1 of the guide)")
    written = path.read_bytes()
    if not written.strip():
        raise Fail(f"{path.name} is empty")
    server = _server(ctx)
    port = _port(ctx, server)
    response = ctx.as_guest(port, "/openstack/latest/user_data")
    if response.status_code == 404:
        raise Fail(f"{server['name']} has no user data: boot it with --user-data {USER_DATA}")
    response.raise_for_status()
    if response.content != written:
        raise Fail(f"the user data of {server['name']} is not what {path.name} holds now: "
                   "boot it with this file (user data is given at boot and never changes)")


@check("the flow check of your boot of {server} is clean")
def clean_flow(ctx):
    result = ctx.flow(ctx.names["server"])
    if not result.ok:
        missing = [r.step.number for r in result.results if r.missing]
        late = [r.step.number for r in result.results if r.out_of_order]
        raise Fail(f"{result.summary}" + (f"; missing: {missing}" if missing else "")
                   + (f"; out of order: {late}" if late else ""))


def _step_span(ctx, key: str, number: int, what: str) -> None:
    """The answer to ``key`` must be the span the flow check matched for step ``number``."""
    span = _step(ctx, number)
    result = ctx.flow(ctx.names["server"])
    given = ctx.answered_span(key, result.trace, f"your boot of {ctx.names['server']}")
    if given.span_id != span.span_id:
        raise Fail(f"{given.service}'s {given.name} is not {what}: find it in the flow check "
                   "of your boot (step 3-6 of the guide say where to look)")


@check("where keystone stored your token (answer token-span)")
def token_span(ctx):
    _step_span(ctx, "token-span", 2, "the SQL INSERT that stored your token")


@check("nova-compute's first call to nova-conductor (answer conductor-span)")
def conductor_span(ctx):
    _step_span(ctx, "conductor-span", 14, "nova-compute's first rpc.call to the conductor")


@check("the external event Neutron sent Nova for your port (answer vif-event)")
def vif_event(ctx):
    trace = ctx.boot(ctx.names["server"])
    waited = {str(e) for s in trace if s.service == "nova-compute" and s.get(attr.NOVA_EVENTS)
              for e in s.get(attr.NOVA_EVENTS)}
    given = ctx.answer("vif-event")
    if given in {re.sub(rf"-{_UUID}$", "", e) for e in waited} - waited:
        raise Fail(f"{given!r} is the event's name: give it whole, with the port it names "
                   f"({attr.NOVA_EVENTS} on ComputeVirtAPI.wait_for_instance_event)")
    if given not in waited:
        raise Fail(f"{given!r} is not an event nova-compute waited for in your boot: Neutron "
                   "tells Nova through POST /os-server-external-events (step 38); "
                   f"ComputeVirtAPI.wait_for_instance_event names it ({attr.NOVA_EVENTS})")


@check("the libvirt call that handed your volume to the guest (answer volume-span)")
def volume_span(ctx):
    _step_span(ctx, "volume-span", 48, "the libvirt call that defined the guest with your "
               "volume")


@check("where nova-compute found whether the image was cached (answer cache-span)")
def cache_span(ctx):
    trace = ctx.boot(ctx.names["server"])
    recorded = [s for s in trace if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None]
    if not recorded:
        raise Fail(f"your trace records no {attr.NOVA_IMAGE_CACHE_HIT}: was the image fetched?")
    given = ctx.answered_span("cache-span", trace, f"your boot of {ctx.names['server']}")
    if given.span_id not in {s.span_id for s in recorded}:
        raise Fail(f"{given.service}'s {given.name} did not look in the image cache: which "
                   f"span records {attr.NOVA_IMAGE_CACHE_HIT}?")
