"""Lab 05: the learner's image, fetched by their first boot (steps 19-25), cached for the second.

Every answer is checked against what the learner's own cloud and trace show:
the image's checksum in Glance's record (their own random bytes), the span id of
the ``ceph.osd/read`` of their image's object below step 23 of their first boot
(which OSD and pool serve it is read there, not asked: three OSDs and one pool
are everyone's answers), and the duration of that boot's step 23 span.
"""

import re

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

FETCH = tuple(range(19, 26))


def _image(ctx) -> dict:
    name = ctx.names["image"]
    found = ctx.api.get("image", "/v2/images", name=name)["images"]
    if not found:
        raise Fail(f"no image named {name}: upload one (step 1 of the guide)")
    if len(found) > 1:
        raise Fail(f"{len(found)} images are named {name}: delete all but one")
    return found[0]


def _booted_from_image(ctx, key: str) -> dict:
    name = ctx.names[key]
    server = ctx.require_active(name, f"boot it from {ctx.names['image']}")
    image = _image(ctx)
    if (server.get("image") or {}).get("id") != image["id"]:
        raise Fail(f"{name} was not booted from {image['name']}: `--image {image['name']}`")
    return server


def _cache_hits(trace) -> list:
    """``nova.image.cache_hit`` of every ``Image.cache`` span of the boot."""
    return [s.get(attr.NOVA_IMAGE_CACHE_HIT) for s in trace
            if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None]


def _step23(ctx):
    """Step 23's span in the first boot: ceph-rgw's GET of the learner's image."""
    result = ctx.flow(ctx.names["first"])
    step = result.result(23)
    if not step.matched:
        raise Fail(f"step 23 is not in the trace of {ctx.names['first']} "
                   f"({step.excused or 'missing'})")
    return result, step.span


def _object_reads(ctx) -> list:
    """The OSD reads of the image's own object, below step 23 of the first boot."""
    image = _image(ctx)
    result, rgw = _step23(ctx)
    trace = result.trace
    wanted = f"glance/{image['id']}"
    reads = [s for s in trace.descendants(rgw) if s.get(attr.CEPH_OBJECT) == wanted
             and s.get(attr.RPC_METHOD) == "read"]
    if not reads:
        raise Fail(f"no ceph.osd/read of {wanted} below step 23 of {ctx.names['first']}")
    return reads


def _number(text: str) -> float:
    found = re.search(r"-?\d+(?:\.\d+)?", text.replace(",", "."))
    if not found:
        raise Fail(f"{text!r} is not a number")
    return float(found.group())


@check("{image} is an active raw image of your project")
def image_uploaded(ctx):
    image = _image(ctx)
    if image["status"] != "active":
        raise Fail(f"{image['name']} is {image['status']}: its data was never uploaded "
                   "(`openstack image create --file FILE ...`)")
    if image.get("owner") != ctx.api.client.project_id:
        raise Fail(f"{image['name']} belongs to another project: upload your own")
    if image.get("disk_format") != "raw":
        raise Fail(f"{image['name']} is {image.get('disk_format')}: upload it with "
                   "`--disk-format raw` (nova-compute copies the bytes into the disk as they are)")


@check("{first} is ACTIVE, booted from {image}")
def first_booted(ctx):
    _booted_from_image(ctx, "first")


@check("{second} is ACTIVE, booted from {image}")
def second_booted(ctx):
    _booted_from_image(ctx, "second")


@check("your first boot of {image} fetched it: steps 19-25 in the trace of {first}")
def first_boot_fetched(ctx):
    server = _booted_from_image(ctx, "first")
    result = ctx.flow(server["name"])
    if any(result.result(n).excused for n in FETCH):
        raise Fail(f"{server['name']} found the image already cached "
                   f"({result.result(19).excused}): boot {server['name']} first, then "
                   f"{ctx.names['second']}. To start over, delete both servers and the image "
                   "and upload it again (a new image id is a new cache entry)")
    missing = [n for n in FETCH if not result.result(n).matched]
    if missing:
        raise Fail(f"steps {missing} are missing from the trace of {server['name']} "
                   f"({result.summary})")
    image = _image(ctx)
    if not str(result.result(23).span.get(attr.URL_PATH, "")).endswith(image["id"]):
        raise Fail(f"step 23 of {server['name']} fetched another object, not {image['name']}")


@check("your second boot of {image} found it cached: steps 19-25 not expected for {second}")
def second_boot_cached(ctx):
    server = _booted_from_image(ctx, "second")
    result = ctx.flow(server["name"])
    fetched = [n for n in FETCH if result.result(n).matched]
    if fetched:
        raise Fail(f"{server['name']} fetched the image again (steps {fetched} matched): was "
                   f"it booted before {ctx.names['first']}, or on another host?")
    hits = _cache_hits(result.trace)
    if not hits or not all(hits):
        raise Fail(f"the trace of {server['name']} records no cache hit "
                   "(nova.image.cache_hit on Image.cache)")


@check("the MD5 checksum nova-compute verified (answer checksum)")
def checksum(ctx):
    given = ctx.answer("checksum").lower()
    if given != _image(ctx).get("checksum"):
        raise Fail(f"{given!r} is not the MD5 checksum in Glance's record of "
                   f"{ctx.names['image']}, which nova-compute compares with the bytes it got: "
                   "read the image's `checksum` (or `md5sum` the file you uploaded)")


@check("the OSD read of your image's object, step 24 (answer object-read)")
def object_read(ctx):
    given = ctx.answer("object-read").lower()
    reads = _object_reads(ctx)
    if given not in {s.span_id for s in reads}:
        raise Fail(f"{given!r} is not the span of the ceph.osd/read of glance/<image id> below "
                   f"step 23 of {ctx.names['first']}: answer its span id (the pool and the "
                   "OSD are on it too)")


@check("how long step 23 took in {first} (answer rgw-ms)")
def rgw_ms(ctx):
    given = _number(ctx.answer("rgw-ms"))
    _, span = _step23(ctx)
    took = span.duration_ns / 1e6
    if abs(given - took) > max(1.0, 0.2 * took):
        raise Fail(f"{given:g} ms is not how long step 23's span took in {ctx.names['first']}: "
                   "its duration in `novalab trace show`, or step 25's offset minus step 23's "
                   "in the flow check")
