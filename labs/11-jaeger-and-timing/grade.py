"""Lab 11: two boots of one image, their Jaeger export, and timings read from them.

The Jaeger file must be valid against ``diagrams/jaeger.py``'s SCHEMA and hold the
spans of both of the learner's boots, each as the trace has it (name, start and
duration, to the microsecond): parsed, never grepped for ids. The answers are the
learner's own boots': the span id of the slowest step of the cold boot (answers
aside; steps within 5% of the longest count too, a tie is no error), the duration
of its ``fetch`` span (to 1%, a classmate's fetch took another time), and the span
id of the warm boot's ``Image.cache``, which found the image in the host's cache.
The attempt draws the image's size.
"""

import json
import re

import jsonschema

from novalab.diagrams.flows.model import RETURN
from novalab.diagrams.jaeger import SCHEMA
from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

FETCH = tuple(range(19, 26))
JAEGER_FILE = "boots.jaeger.json"
POLLS = 55  # the first of the client's poll steps


def _image(ctx) -> dict:
    name = ctx.names["image"]
    found = ctx.api.get("image", "/v2/images", name=name)["images"]
    if not found or found[0]["status"] != "active":
        raise Fail(f"no active image named {name}: `novalab lab start 11` uploads it")
    return found[0]


def _booted(ctx, key: str) -> dict:
    name = ctx.names[key]
    server = ctx.require_active(name, f"boot it from {ctx.names['image']}")
    if (server.get("image") or {}).get("id") != _image(ctx)["id"]:
        raise Fail(f"{name} was not booted from {ctx.names['image']}")
    return server


def _cold(ctx):
    """The flow check of the cold boot, which must have fetched the image."""
    _booted(ctx, "cold")
    result = ctx.flow(ctx.names["cold"])
    if result.result(19).excused:
        raise Fail(f"{ctx.names['cold']} did not fetch the image ({result.result(19).excused}). "
                   f"Boot {ctx.names['cold']} first, then {ctx.names['warm']}; to start over, "
                   "`novalab lab reset 11` (a new image, not cached anywhere)")
    return result


def _durations(result) -> dict[int, float]:
    """Milliseconds of the span of every matched step that is not an answer."""
    return {r.step.number: r.span.duration_ns / 1e6 for r in result.results
            if r.matched and r.step.kind != RETURN}


@check("{cold} and {warm} are ACTIVE, booted from {image}")
def both_booted(ctx):
    _booted(ctx, "cold")
    _booted(ctx, "warm")


@check("{cold} fetched the image (steps 19-25), {warm} found it in the cache")
def cold_and_warm(ctx):
    cold = _cold(ctx)
    missing = [n for n in FETCH if not cold.result(n).matched]
    if missing:
        raise Fail(f"steps {missing} are missing from {ctx.names['cold']} ({cold.summary})")
    warm = ctx.flow(ctx.names["warm"])
    if any(warm.result(n).matched for n in FETCH):
        raise Fail(f"{ctx.names['warm']} fetched the image too: was it booted on another "
                   f"host, or before {ctx.names['cold']}?")
    hits = [s.get(attr.NOVA_IMAGE_CACHE_HIT) for s in warm.trace
            if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None]
    if not hits or not all(hits):
        raise Fail(f"the trace of {ctx.names['warm']} records no cache hit")


@check(f"{JAEGER_FILE} in your lab folder is Jaeger JSON of both boots")
def jaeger_file(ctx):
    path = ctx.workdir / JAEGER_FILE
    if not path.exists():
        raise Fail(f"no {path}: `novalab export jaeger --server {ctx.names['cold']} "
                   f"--server {ctx.names['warm']} -o {JAEGER_FILE}` in that folder (step 3)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(doc, SCHEMA)
    except (ValueError, jsonschema.ValidationError) as exc:
        raise Fail(f"{path.name} is not a Jaeger JSON document: {str(exc).splitlines()[0]}") \
            from exc
    spans = {(span["traceID"], span["spanID"]) for item in doc["data"]
             for span in item["spans"]}
    for key in ("cold", "warm"):
        result = ctx.flow(ctx.names[key])
        # The polls (55-58) are left out: a later `openstack server show` is one more
        # poll of the boot, so its last one may be newer than the file.
        wanted = {(r.span.trace_id, r.span.span_id) for r in result.results
                  if r.matched and r.step.number < POLLS}
        if not wanted & spans:
            raise Fail(f"{path.name} does not hold the boot of {ctx.names[key]} "
                       f"(trace {result.trace.trace_id})")
        if not wanted <= spans:
            raise Fail(f"{path.name} holds only part of the boot of {ctx.names[key]}: export "
                       "it again once the boot is ACTIVE")
        exported = {(s["traceID"], s["spanID"]): s for item in doc["data"]
                    for s in item["spans"]}
        for r in result.results:
            if r.matched and r.step.number < POLLS:
                span, there = r.span, exported[(r.span.trace_id, r.span.span_id)]
                if (there["operationName"], there["startTime"], there["duration"]) != \
                        (span.name, span.start_ns // 1000, span.duration_ns // 1000):
                    raise Fail(f"{path.name} says span {span.span_id} is "
                               f"{there['operationName']!r}, {there['duration']} µs long; the "
                               f"trace of {ctx.names[key]} says {span.name!r}, "
                               f"{span.duration_ns // 1000} µs: export it, do not write it")


@check("the slowest step of {cold} (answer slowest-span)")
def slowest_span(ctx):
    cold = _cold(ctx)
    given = ctx.answered_span("slowest-span", cold.trace, f"the boot of {ctx.names['cold']}")
    durations = _durations(cold)
    longest = max(durations.values())
    numbers = [r.step.number for r in cold.results
               if r.matched and r.span.span_id == given.span_id and r.step.number in durations]
    if not numbers:
        raise Fail(f"{given.name} is the span of no request step of {ctx.names['cold']}: "
                   "answer the span id the flow check names for a step (answers, RETURN "
                   "steps, have no span of their own)")
    took = durations[numbers[0]]
    if took < 0.95 * longest:
        raise Fail(f"step {numbers[0]}'s span took {took:.1f} ms, and another step's "
                   "took longer: join the flow check's span ids with the Jaeger file's "
                   "durations (step 4 of the guide)")


@check("how long nova-compute fetched the image in {cold} (answer fetch-ms)")
def fetch_ms(ctx):
    given = ctx.answer("fetch-ms")
    found = re.search(r"\d+(?:\.\d+)?", given.replace(",", "."))
    if not found:
        raise Fail(f"{given!r} is not a number of milliseconds")
    fetches = [s for s in _cold(ctx).trace
               if s.service == "nova-compute" and s.name == "fetch"]
    if not fetches:
        raise Fail(f"no fetch span in {ctx.names['cold']}")
    took = fetches[0].duration_ns / 1e6
    if abs(float(found.group()) - took) > max(0.2, 0.01 * took):
        raise Fail(f"{found.group()} ms is not how long the fetch span took in "
                   f"{ctx.names['cold']}: find the span named fetch (nova/virt/images.py) "
                   "under Image.cache, and read its duration")


@check("where {warm} found the image in the cache (answer cache-span)")
def cache_span(ctx):
    _booted(ctx, "warm")
    warm = ctx.boot(ctx.names["warm"])
    hits = [s for s in warm if s.get(attr.NOVA_IMAGE_CACHE_HIT)]
    if not hits:
        raise Fail(f"the trace of {ctx.names['warm']} records no cache hit")
    given = ctx.answered_span("cache-span", warm, f"the boot of {ctx.names['warm']}")
    if given.span_id not in {s.span_id for s in hits}:
        raise Fail(f"{given.service}'s {given.name} did not find the image in the cache: "
                   f"which span of {ctx.names['warm']} records {attr.NOVA_IMAGE_CACHE_HIT}?")
