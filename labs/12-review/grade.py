"""Lab 12: one boot to a spec, and the whole trace explained.

The spec is checked through the APIs (nova's server, neutron's port, cinder's
volume and its attachment) and through the metadata service, as the guest
reads it (its user data, through neutron-metadata-proxy, compared byte for byte
with the learner's file). The flow check of the boot must be clean. Each answer
is compared with the learner's own trace: the span the flow check matched for
the step the question names, or the attribute nova-compute recorded.
"""

import re

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

FLAVOR = "m1.tiny"
IMAGE = "cirros"
NETWORK = "private"
FIXED_IP = "10.0.0.50"
VOLUME_GB = 1
PROPERTY = ("purpose", "review")
USER_DATA = "user-data.yaml"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


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


@check(f"{{server}} has the address {FIXED_IP} on {NETWORK}")
def fixed_address(ctx):
    server = _server(ctx)
    port = _port(ctx, server)
    networks = ctx.api.get("network", "/v2.0/networks", name=NETWORK)["networks"]
    if not networks or port["network_id"] != networks[0]["id"]:
        raise Fail(f"the port of {server['name']} is not on {NETWORK}")
    addresses = [f["ip_address"] for f in port["fixed_ips"]]
    if FIXED_IP not in addresses:
        raise Fail(f"the port of {server['name']} has {', '.join(addresses)}, not {FIXED_IP}: "
                   "ask for the address when you boot (`--nic net-id=...,v4-fixed-ip=...`)")


@check(f"a blank {VOLUME_GB} GB volume is attached to {{server}}")
def blank_volume(ctx):
    server = _server(ctx)
    volume = _volume(ctx, server)
    if volume["size"] != VOLUME_GB:
        raise Fail(f"the volume of {server['name']} has {volume['size']} GB; the spec says "
                   f"{VOLUME_GB}")
    if str(volume.get("bootable")).lower() == "true" or volume.get("volume_image_metadata"):
        raise Fail(f"the volume of {server['name']} was made from an image; the spec asks for "
                   "a blank one (source_type=blank)")
    if not any(a.get("server_id") == server["id"] for a in volume.get("attachments") or ()):
        raise Fail(f"cinder does not show the volume attached to {server['name']}")


@check(f"{{server}} has the property {PROPERTY[0]}={PROPERTY[1]}")
def has_property(ctx):
    server = _server(ctx)
    key, value = PROPERTY
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


@check("the table of step 2 (answer token-table)")
def token_table(ctx):
    span = _step(ctx, 2)
    table = str(span.get(attr.DB_COLLECTION_NAME) or span.name.split()[-1])
    given = ctx.answer("token-table")
    if given != table:
        raise Fail(f"{given!r} is not the table step 2 of your boot wrote: its span is keystone's "
                   "SQL INSERT below POST /v3/auth/tokens")


@check("the RPC method of step 14 (answer conductor-call)")
def conductor_call(ctx):
    span = _step(ctx, 14)
    given = ctx.answer("conductor-call")
    if given != span.get(attr.RPC_METHOD):
        raise Fail(f"{given!r} is not the method of step 14's call in your boot: the flow check "
                   "writes it in brackets after the span's name, [call METHOD]")


@check("the external event of step 38 (answer vif-event)")
def vif_event(ctx):
    trace = ctx.boot(ctx.names["server"])
    waited = {str(e) for s in trace if s.service == "nova-compute" and s.get(attr.NOVA_EVENTS)
              for e in s.get(attr.NOVA_EVENTS)}
    names = {re.sub(rf"-{_UUID}$", "", e) for e in waited}
    given = ctx.answer("vif-event")
    if given not in names | waited:
        raise Fail(f"{given!r} is not an event nova-compute waited for in your boot: Neutron "
                   "tells Nova through POST /os-server-external-events (step 38); "
                   f"ComputeVirtAPI.wait_for_instance_event names it ({attr.NOVA_EVENTS})")


@check("the libvirt call of step 48 (answer volume-call)")
def volume_call(ctx):
    span = _step(ctx, 48)
    method = str(span.get(attr.RPC_METHOD) or span.name.removeprefix("libvirt."))
    given = ctx.answer("volume-call").removeprefix("libvirt.")
    if given.lower() != method.lower():
        raise Fail(f"{given!r} is not the libvirt call of step 48 in your boot: read the span's "
                   "name on the line of step 48")


@check("the device of your volume in the guest (answer volume-device)")
def volume_device(ctx):
    server = _server(ctx)
    volume = _volume(ctx, server)
    devices = [a.get("device") for a in volume.get("attachments") or ()
               if a.get("server_id") == server["id"]]
    given = ctx.answer("volume-device")
    if not devices or given.removeprefix("/dev/") != str(devices[0]).removeprefix("/dev/"):
        raise Fail(f"{given!r} is not where the volume is attached: cinder's attachment says "
                   "(`openstack volume list`, or `openstack volume show ID -c attachments`)")


def _numbers(text: str) -> set[int]:
    numbers: set[int] = set()
    if text.strip().lower() in ("none", "-", "0", ""):
        return numbers
    for part in re.split(r"[\s,;]+", text.strip()):
        if not part:
            continue
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise Fail(f"{text!r}: write step numbers or ranges (19-25, 39), or none")
        numbers.update(range(int(low), int(high or low) + 1))
    return numbers


@check("the steps not expected for your boot (answer not-expected)")
def not_expected(ctx):
    result = ctx.flow(ctx.names["server"])
    excused = {r.step.number for r in result.results if not r.expected}
    given = _numbers(ctx.answer("not-expected"))
    if given != excused:
        raise Fail(f"{ctx.answer('not-expected')!r} is not what the flow check of your boot says "
                   "was not expected: count the NOT EXPECTED lines (and read why)")


@check("whether the image was already cached on the host (answer image-cached)")
def image_cached(ctx):
    trace = ctx.boot(ctx.names["server"])
    hits = [s.get(attr.NOVA_IMAGE_CACHE_HIT) for s in trace
            if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None]
    if not hits:
        raise Fail(f"your trace records no {attr.NOVA_IMAGE_CACHE_HIT}: was the image fetched?")
    given = ctx.answer("image-cached").lower()
    if given not in ("yes", "no"):
        raise Fail(f"{given!r}: answer yes or no")
    if (given == "yes") != bool(hits[0]):
        raise Fail(f"{given!r} is not what your trace says: nova-compute records it on "
                   f"Image.cache ({attr.NOVA_IMAGE_CACHE_HIT}), and steps 19-25 follow from it")
