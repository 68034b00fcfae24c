"""Lab 07: the learner's blank volume, its attachment, and steps 39-42, 48-51 in their trace.

The answers are checked against witnesses that must agree: the attachment's
connection_info as Cinder answers it (the attachments API, microversion 3.27), the
domain XML nova-compute defined in step 48 (kept as ``libvirt.xml``) and the
learner's own boot (the Ceph spans QEMU's librbd made under libvirt's
createWithFlags: ``qemu rbd open`` with ``ceph.pool`` / ``ceph.object``, the
monitor's SERVER span, the OSD spans with ``ceph.osd`` and ``ceph.object``). Every
answer is the learner's own: their volume's image and header (its ids), the span
ids of the monitor's and the OSD's answers in their boot. The attempt draws the
volume's size.
"""

import xml.etree.ElementTree as ET

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

STEPS = (39, 40, 41, 42, 48, 49, 50, 51)
ATTACH_VERSION = {"OpenStack-API-Version": "volume 3.27"}
STAND_IN = "qemu rbd open"


def _volume(ctx) -> dict:
    """The blank volume Nova made for the learner's server: ``<server id>-blank-vol``."""
    server = ctx.require_server(ctx.names["server"], "boot it (step 1 of the guide)")
    name = f"{server['id']}-blank-vol"
    found = ctx.api.get("volumev3", "/volumes/detail", name=name)["volumes"]
    if not found:
        raise Fail(f"no volume named {name}: boot {ctx.names['server']} with a blank volume "
                   "(step 1 of the guide); Nova names it after the server's id")
    return found[0]


def _connection_info(ctx) -> dict:
    """The connection_info of the volume's attachment, as Cinder answers it."""
    volume = _volume(ctx)
    response = ctx.api.request("GET", "volumev3", "/attachments/detail",
                               params={"volume_id": volume["id"]}, headers=ATTACH_VERSION)
    response.raise_for_status()
    attachments = [a for a in response.json()["attachments"] if a.get("connection_info")]
    if not attachments:
        raise Fail(f"{volume['name']} has no attachment with a connection_info")
    return attachments[0]["connection_info"]


def _step(ctx, number: int):
    step = ctx.flow(ctx.names["server"]).result(number)
    if not step.matched:
        raise Fail(f"step {number} is missing from the trace of your boot "
                   f"({step.excused or 'see `novalab flow check --server NAME`'})")
    return step.span


def _open(ctx):
    """The stand-in's ``qemu rbd open`` of the learner's volume, in their boot."""
    trace = ctx.boot(ctx.names["server"])
    image = "volume-" + _volume(ctx)["id"]
    for span in trace:
        if span.name == STAND_IN and span.get(attr.CEPH_OBJECT) == image:
            return trace, span
    raise Fail(f"your boot's trace has no `{STAND_IN}` of {image}: was {ctx.names['server']} "
               "booted with its volume?")


@check("{server} is ACTIVE with its blank volume attached, of the size the attempt drew")
def volume_attached(ctx):
    server = ctx.require_active(ctx.names["server"], "boot it (step 1 of the guide)")
    volume = _volume(ctx)
    size = int(ctx.parameters.get("size", volume["size"]))
    if volume["size"] != size:
        raise Fail(f"{volume['name']} has {volume['size']} GB; this attempt asks for {size} "
                   "(step 1 of the guide): delete the server and boot it again")
    if volume["status"] != "in-use" or \
            server["id"] not in {a.get("server_id") for a in volume.get("attachments", [])}:
        raise Fail(f"{volume['name']} is {volume['status']}, not attached to {server['name']}")


@check("your boot of {server}: steps 39-42 and 48-51, in order")
def volume_steps(ctx):
    result = ctx.flow(ctx.names["server"])
    missing = [n for n in STEPS if not result.result(n).matched]
    if missing:
        raise Fail(f"missing from your boot: steps {missing} ({result.summary})")
    late = [n for n in STEPS if result.result(n).out_of_order]
    if late:
        raise Fail(f"out of order in your boot: steps {late}")
    volume = _volume(ctx)
    defined = [a for a in result.trace.ancestors(result.result(48).span)
               if volume["id"] in (a.get(attr.NOVA_VOLUME_IDS) or ())]
    if not defined:
        raise Fail(f"step 48 of this boot defined a guest without {volume['name']}")


@check("your volume's RBD image (answer rbd-image)")
def rbd_image(ctx):
    info = _connection_info(ctx)
    _trace, opened = _open(ctx)
    given = ctx.answer("rbd-image")
    if info.get("driver_volume_type") != "rbd":
        raise Fail(f"the attachment is a {info.get('driver_volume_type')} disk, not rbd")
    traced = f"{opened.get(attr.CEPH_POOL)}/{opened.get(attr.CEPH_OBJECT)}"
    if info.get("name") != traced:
        raise Fail(f"the connection_info names {info.get('name')} but QEMU opened {traced}")
    if given != traced:
        raise Fail(f"{given!r} is not your volume's image: the attachment's connection_info "
                   "names it (`name`, pool/image), and `qemu rbd open` in your trace opened it")


@check("the monitor's answer of the cluster map to librbd (answer mon-span)")
def monitor(ctx):
    span = _step(ctx, 49)
    trace = ctx.boot(ctx.names["server"])
    given = ctx.answered_span("mon-span", trace, f"your boot of {ctx.names['server']}")
    if given.span_id != span.span_id:
        raise Fail(f"{given.service}'s {given.name} is not the ceph-mon SERVER span that gave "
                   "librbd the cluster map (step 49, under `qemu rbd open`)")
    traced = f"{span.get(attr.SERVER_ADDRESS)}:{span.get(attr.SERVER_PORT)}"
    info = _connection_info(ctx)
    listed = {f"{host}:{port}" for host, port in zip(info.get("hosts", ()),
                                                     info.get("ports", ()), strict=False)}
    if traced not in listed:
        raise Fail(f"QEMU asked {traced}, which is not among the monitors the connection_info "
                   f"lists ({', '.join(sorted(listed))})")


@check("the OSD's answer of step 51 (answer osd-span)")
def osd(ctx):
    span = _step(ctx, 51)
    trace = ctx.boot(ctx.names["server"])
    given = ctx.answered_span("osd-span", trace, f"your boot of {ctx.names['server']}")
    if given.span_id != span.span_id:
        raise Fail(f"{given.service}'s {given.name} is not the ceph-osd span of step 51: "
                   "the OSD CRUSH placed your image's rbd_id object on (ceph.osd)")


@check("the header object of your image (answer header)")
def header(ctx):
    trace, opened = _open(ctx)
    read = {str(s.get(attr.CEPH_OBJECT)) for s in trace.descendants(opened)
            if str(s.get(attr.CEPH_OBJECT, "")).startswith("rbd_header.")}
    if not read:
        raise Fail("librbd read no rbd_header object in your boot's `qemu rbd open`")
    given = ctx.answer("header")
    if given not in read:
        raise Fail(f"{given!r} is not the header librbd read to open your image: look under "
                   "`qemu rbd open` for the object read after rbd_id.<image name>")


@check("your volume's disk in the domain XML nova-compute defined")
def disk(ctx):
    server = ctx.require_server(ctx.names["server"], "boot it (step 1 of the guide)")
    found = sorted(ctx.cloud.state_dir.glob(f"instances/*/{server['id']}/libvirt.xml"))
    if not found:
        raise Fail(f"no libvirt.xml of {server['name']} in the cloud's instances folder")
    name = _connection_info(ctx).get("name")
    targets = {d.find("target").get("dev") for d in ET.parse(found[0]).getroot().iter("disk")
               if d.get("type") == "network" and d.find("source") is not None
               and d.find("source").get("name") == name and d.find("target") is not None}
    if not targets:
        raise Fail(f"the domain XML of {server['name']} has no rbd disk {name}")
    devices = {a.get("device", "").removeprefix("/dev/")
               for a in _volume(ctx).get("attachments", [])}
    if not targets & devices:
        raise Fail(f"Cinder records {sorted(devices)} for the attachment, the domain XML "
                   f"{sorted(targets)}")
