"""Lab 10: failure drills, each graded from the trace of the boot the fault broke.

A drill's boot counts when its server is ERROR and its trace carries the
``novalab.fault`` event of the drill's fault: the fault really struck that boot.
The answers are compared with what that trace shows, never with the catalog:

* **the service** is the one whose span carries the ``novalab.fault`` event, the
  service that failed. The span that ends in ERROR often belongs to another (the
  one that noticed: nova-compute refusing the image's bytes, or tired of waiting).
* **the step** is the step of the learner's flow check whose span is nearest the
  fault's span in the span tree (the request the fault struck inside, or the
  nearest one, and its answer). A fault that holds a message back (no
  ``network-vif-plugged``) strikes after a step that went well: its step is the
  first one after that the flow check shows missing or late (some later step
  causally before it).
* **compute-crash** (``novalab up`` only) leaves no span at all: the process died
  before writing them. Its step is the first step of the flow check that is
  missing, its service the one the classic table gives that step to.
"""

from dataclasses import dataclass

from novalab.labs.cloud import describe
from novalab.labs.grading import Fail, Skip, check
from novalab.tracing import attributes as attr

# How long to wait for a drill's trace to be whole. A boot that failed after its
# port was bound leaves the L2 agent waiting (up to 60 s) for a tap no guest will
# make, so its trace stays open that long; what a drill is graded on (the fault's
# span, the ERROR spans, the steps) was written before the server went ERROR.
TRACE_TIMEOUT = 5.0


@dataclass(frozen=True)
class Drill:
    key: str                 # the answers' prefix: port-step, port-service
    fault: str               # the fault knob
    server: str              # the key of the server's name in lab.toml
    guide_step: int          # where the guide runs it
    holds_back: bool = False  # the fault keeps a message from being sent


DRILLS = {drill.key: drill for drill in (
    Drill("port", "port-binding", "port-vm", 2),
    Drill("volume", "volume-error", "volume-vm", 3),
    Drill("image", "image-checksum", "image-vm", 4),
    Drill("vif", "vif-plugged-timeout", "vif-vm", 5, holds_back=True),
)}


def _service(name: str) -> str:
    """``Neutron-server``, ``neutron_server``, ``neutron-server@compute-1``: one name."""
    return name.strip().split("@")[0].lower().replace("_", "-")


def _fault_span(ctx, drill: Drill):
    """The span of the drill's boot where its fault struck (Fail when it did not)."""
    name = ctx.names[drill.server]
    server = ctx.require_server(name, f"boot it (step {drill.guide_step} of the guide)")
    if server["status"] == "ACTIVE":
        raise Fail(f"{name} is ACTIVE: {drill.fault} did not strike it. Delete it, "
                   f"inject the fault (`novalab fault inject {drill.fault} --once`) and "
                   "boot it again")
    if server["status"] != "ERROR":
        raise Fail(f"{name} is {server['status']}: wait until it is ERROR "
                   f"(`openstack server show {name}`)")
    ctx.trace_timeout = min(ctx.trace_timeout, TRACE_TIMEOUT)
    trace = ctx.boot(name)
    struck = [(span, event) for span in trace for event in span.events
              if event.name == attr.NOVALAB_FAULT_EVENT]
    mine = [span for span, event in struck
            if event.attributes.get(attr.NOVALAB_FAULT_NAME) == drill.fault]
    if not mine:
        others = sorted({str(e.attributes.get(attr.NOVALAB_FAULT_NAME)) for _, e in struck})
        raise Fail(f"{name} is ERROR, but {drill.fault} did not strike its boot (faults in "
                   f"its trace: {', '.join(others) or 'none'}). Delete it, inject "
                   f"{drill.fault} --once and boot it again")
    return trace, mine[0]


def _distance(trace, one, other) -> int | None:
    """Hops between two spans of the span tree (None: not in one tree)."""
    up = {span.span_id: hops for hops, span in enumerate([one, *trace.ancestors(one)])}
    for hops, span in enumerate([other, *trace.ancestors(other)]):
        if span.span_id in up:
            return up[span.span_id] + hops
    return None


def _failing_steps(ctx, drill: Drill) -> tuple[set[int], set[int]]:
    """(the steps where the learner's trace shows the failure, the steps nearest the
    fault's span)."""
    trace, fault = _fault_span(ctx, drill)
    result = ctx.flow(ctx.names[drill.server])
    distances = {r.step.number: _distance(trace, fault, r.span)
                 for r in result.results if r.matched}
    distances = {number: hops for number, hops in distances.items() if hops is not None}
    if not distances:
        raise Fail("no step of your flow check is in the fault's span tree: is the trace "
                   "whole? (`novalab flow check --server NAME`)")
    closest = min(distances.values())
    nearest = {number for number, hops in distances.items() if hops == closest}
    if not drill.holds_back:
        return nearest, nearest
    late = {number for r in result.results for number in r.precedes}
    after = [r.step.number for r in result.results
             if r.step.number > max(nearest) and (r.missing or r.step.number in late)]
    if not after:
        raise Fail("nothing after the fault is missing or late in your flow check: did the "
                   f"boot of {ctx.names[drill.server]} wait for the plug at all?")
    return {after[0]}, nearest


def _step_answer(ctx, key: str) -> int:
    given = ctx.answer(key)
    try:
        number = int(given)
    except ValueError:
        raise Fail(f"{given!r} is not a step number: answer the number (1-58) of the step "
                   "in the flow check") from None
    return number


def _check_step(ctx, drill: Drill) -> None:
    steps, nearest = _failing_steps(ctx, drill)
    given = _step_answer(ctx, f"{drill.key}-step")
    if given in steps:
        return
    name = ctx.names[drill.server]
    result = ctx.flow(name)
    if 1 <= given <= len(result.results) and result.result(given).missing:
        raise Fail(f"step {given} is MISSING from your boot because the boot stopped "
                   "before it: a consequence. Where did the fault itself strike?")
    if drill.holds_back and given in nearest:
        raise Fail(f"step {given} went well: the fault struck right after it. What should "
                   "neutron-server have done next, and when did your flow check see it?")
    raise Fail(f"your trace shows no failure at step {given}: find the span with the "
               f"novalab.fault event (`novalab trace show --server {name} --attributes`), "
               "then the step of the flow check whose request holds it, or is nearest")


def _check_service(ctx, drill: Drill) -> None:
    trace, fault = _fault_span(ctx, drill)
    given = _service(ctx.answer(f"{drill.key}-service"))
    if given == fault.service:
        return
    errors = {span.service for span in trace if span.status == "ERROR"
              and _distance(trace, fault, span) is not None}
    if given in errors:
        raise Fail(f"{given} has a span that ends in ERROR: it noticed the failure. Did "
                   "it cause it? Whose span carries the novalab.fault event?")
    raise Fail(f"{given!r} is not the service whose span carries the novalab.fault event "
               f"in the trace of {ctx.names[drill.server]}")


# The drills, in the guide's order: the boot, its step, its service ----------------------

@check("{port-vm}: its boot broken by port-binding")
def port_boot(ctx):
    _fault_span(ctx, DRILLS["port"])


@check("the port drill: the failing step (answer port-step)")
def port_step(ctx):
    _check_step(ctx, DRILLS["port"])


@check("the port drill: the service that failed (answer port-service)")
def port_service(ctx):
    _check_service(ctx, DRILLS["port"])


@check("{volume-vm}: its boot broken by volume-error")
def volume_boot(ctx):
    _fault_span(ctx, DRILLS["volume"])


@check("the volume drill: the failing step (answer volume-step)")
def volume_step(ctx):
    _check_step(ctx, DRILLS["volume"])


@check("the volume drill: the service that failed (answer volume-service)")
def volume_service(ctx):
    _check_service(ctx, DRILLS["volume"])


@check("{image-vm}: a boot of {image}, broken by image-checksum")
def image_boot(ctx):
    server = ctx.require_server(ctx.names["image-vm"], "boot it (step 4 of the guide)")
    image = ctx.api.get("image", f"/v2/images/{server['image']['id']}")
    if image["name"] != ctx.names["image"]:
        raise Fail(f"{server['name']} boots {image['name']}, not {ctx.names['image']}: "
                   "only an image the host has not cached is fetched, and can come back "
                   "wrong")
    _fault_span(ctx, DRILLS["image"])


@check("the image drill: the failing step (answer image-step)")
def image_step(ctx):
    _check_step(ctx, DRILLS["image"])


@check("the image drill: the service that failed (answer image-service)")
def image_service(ctx):
    _check_service(ctx, DRILLS["image"])


@check("{vif-vm}: its boot broken by vif-plugged-timeout")
def vif_boot(ctx):
    _fault_span(ctx, DRILLS["vif"])


@check("the vif drill: the step that failed (answer vif-step)")
def vif_step(ctx):
    _check_step(ctx, DRILLS["vif"])


@check("the vif drill: the service that failed (answer vif-service)")
def vif_service(ctx):
    _check_service(ctx, DRILLS["vif"])


@check("novalab up only: {crash-vm}, crash-step and crash-service")
def crash_drill(ctx):
    cloud = describe(ctx.cloud.state_dir)
    if cloud is None or cloud.kind != "up":
        raise Skip("compute-crash kills a nova-compute process; this cloud runs every "
                   "service in one (step 6 of the guide)")
    name = ctx.names["crash-vm"]
    server = ctx.require_server(name, "boot it (step 6 of the guide)")
    if server["status"] == "BUILD":
        raise Fail(f"{name} is BUILD: nobody builds it while its nova-compute is down "
                   "(`novalab status`); run `novalab up` again to restart it")
    if server["status"] != "ERROR":
        raise Fail(f"{name} is {server['status']}: inject compute-crash --once, delete it "
                   "and boot it again")
    ctx.trace_timeout = min(ctx.trace_timeout, TRACE_TIMEOUT)  # its send has no consumer
    result = ctx.flow(name)
    missing = [r for r in result.results if r.missing]
    if not missing:
        raise Fail(f"the flow check of {name} misses no step: the crash did not stop it")
    first = missing[0]
    given = _step_answer(ctx, "crash-step")
    if given != first.step.number:
        raise Fail(f"step {given} is not where your boot stopped: the first MISSING step "
                   "of its flow check is (no span ends in ERROR: the process died)")
    service = _service(ctx.answer("crash-service"))
    if service != _service(first.step.source):
        raise Fail(f"{service!r} did not die: whose queue did the scheduler's cast go to, "
                   "and which service should have taken it off?")
