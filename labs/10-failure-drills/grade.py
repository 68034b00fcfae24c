"""Lab 10: failure drills, each graded from the trace of the boot the fault broke.

The lab service armed the faults at ``lab start``, for this learner alone, and
said nothing of where they strike. A drill's boot counts when its server is ERROR
and its trace carries the ``novalab.fault`` event of the fault armed for it. The
answers are span ids of that trace (no other boot has them), compared with what
the trace shows, never with the catalog:

* **the fault's span** is the one with the ``novalab.fault`` event: the service
  that failed. The span that ends in ERROR often belongs to another (the one that
  noticed: nova-compute refusing the image's bytes, or tired of waiting).
* **the step** is the span the learner's flow check names for the step nearest
  the fault's span in the span tree (the request the fault struck inside, or the
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
    key: str                 # the answers' prefix and the server's key: vm1-fault, vm1-step
    fault: str               # the fault knob armed for it
    guide_step: int          # where the guide runs it
    holds_back: bool = False  # the fault keeps a message from being sent


DRILLS = {drill.key: drill for drill in (
    Drill("vm1", "port-binding", 2),
    Drill("vm2", "volume-error", 3),
    Drill("vm3", "image-checksum", 4),
    Drill("vm4", "vif-plugged-timeout", 5, holds_back=True),
)}


def _service(name: str) -> str:
    """``Neutron-server``, ``neutron_server``, ``neutron-server@compute-1``: one name."""
    return name.strip().split("@")[0].lower().replace("_", "-")


def _fault_span(ctx, drill: Drill):
    """The span of the drill's boot where its fault struck (Fail when it did not)."""
    name = ctx.names[drill.key]
    server = ctx.require_server(name, f"boot it (step {drill.guide_step} of the guide)")
    if server["status"] == "ACTIVE":
        raise Fail(f"{name} is ACTIVE: no fault struck it (booted out of order, after "
                   f"`lab start` armed nothing more?). `novalab lab reset "
                   f"{ctx.lab.number}` arms the drills again; boot them in the guide's order")
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
        raise Fail(f"{name} is ERROR, but not from the fault armed for this drill (booted "
                   f"out of order?): `novalab lab reset {ctx.lab.number}` arms the drills "
                   "again; boot them in the guide's order")
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
    result = ctx.flow(ctx.names[drill.key])
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
                   f"boot of {ctx.names[drill.key]} wait for the plug at all?")
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
    name = ctx.names[drill.key]
    result = ctx.flow(name)
    span = ctx.answered_span(f"{drill.key}-step", result.trace, f"the boot of {name}")
    named = {r.step.number for r in result.results
             if r.matched and r.span.span_id == span.span_id}
    if named & steps:
        return
    if not named:
        raise Fail(f"your flow check of {name} names span {span.span_id} for no step: "
                   "answer the span id on the line of the step where the boot broke")
    given = min(named)
    if drill.holds_back and named & nearest:
        raise Fail(f"step {given} went well: the fault struck right after it. What should "
                   "neutron-server have done next, and when did your flow check see it?")
    raise Fail(f"your trace shows no failure at step {given}: find the span with the "
               f"novalab.fault event (`novalab trace show --server {name} --attributes`), "
               "then the step of the flow check whose request holds it, or is nearest")


def _check_fault(ctx, drill: Drill) -> None:
    trace, fault = _fault_span(ctx, drill)
    name = ctx.names[drill.key]
    given = ctx.answered_span(f"{drill.key}-fault", trace, f"the boot of {name}")
    if given.span_id == fault.span_id:
        return
    if given.status == "ERROR" and _distance(trace, fault, given) is not None:
        raise Fail(f"{given.service}'s {given.name} ends in ERROR: it noticed the failure. "
                   "Did it cause it? Whose span carries the novalab.fault event?")
    raise Fail(f"{given.service}'s {given.name} is not the span that carries the "
               f"novalab.fault event in the trace of {name}")


# The drills, in the guide's order: the boot, its fault's span, its step ---------------

@check("{vm1}: its boot broken by the fault armed for it")
def vm1_boot(ctx):
    _fault_span(ctx, DRILLS["vm1"])


@check("your first drill: the span the fault struck (answer vm1-fault)")
def vm1_fault(ctx):
    _check_fault(ctx, DRILLS["vm1"])


@check("your first drill: the failing step (answer vm1-step)")
def vm1_step(ctx):
    _check_step(ctx, DRILLS["vm1"])


@check("{vm2}: its boot broken by the fault armed for it")
def vm2_boot(ctx):
    _fault_span(ctx, DRILLS["vm2"])


@check("your second drill: the span the fault struck (answer vm2-fault)")
def vm2_fault(ctx):
    _check_fault(ctx, DRILLS["vm2"])


@check("your second drill: the failing step (answer vm2-step)")
def vm2_step(ctx):
    _check_step(ctx, DRILLS["vm2"])


@check("{vm3}: a boot of {image}, broken by the fault armed for it")
def vm3_boot(ctx):
    server = ctx.require_server(ctx.names["vm3"], "boot it (step 4 of the guide)")
    image = ctx.api.get("image", f"/v2/images/{server['image']['id']}")
    if image["name"] != ctx.names["image"]:
        raise Fail(f"{server['name']} boots {image['name']}, not {ctx.names['image']}: "
                   "boot the image `lab start` uploaded for you")
    _fault_span(ctx, DRILLS["vm3"])


@check("your third drill: the span the fault struck (answer vm3-fault)")
def vm3_fault(ctx):
    _check_fault(ctx, DRILLS["vm3"])


@check("your third drill: the failing step (answer vm3-step)")
def vm3_step(ctx):
    _check_step(ctx, DRILLS["vm3"])


@check("{vm4}: its boot broken by the fault armed for it")
def vm4_boot(ctx):
    _fault_span(ctx, DRILLS["vm4"])


@check("your fourth drill: the span the fault struck (answer vm4-fault)")
def vm4_fault(ctx):
    _check_fault(ctx, DRILLS["vm4"])


@check("your fourth drill: the step that failed (answer vm4-step)")
def vm4_step(ctx):
    _check_step(ctx, DRILLS["vm4"])


@check("novalab up only: {vm5}, vm5-step and vm5-service")
def crash_drill(ctx):
    cloud = describe(ctx.cloud.state_dir)
    if cloud is None or cloud.kind != "up":
        raise Skip("compute-crash kills a nova-compute process; this cloud runs every "
                   "service in one (step 6 of the guide)")
    name = ctx.names["vm5"]
    server = ctx.require_server(name, "boot it (step 6 of the guide)")
    if server["status"] == "BUILD":
        raise Fail(f"{name} is BUILD: nobody builds it while its nova-compute is down "
                   "(`novalab status`); run `novalab up` again to restart it")
    if server["status"] != "ERROR":
        raise Fail(f"{name} is {server['status']}: no fault struck it; `novalab lab reset "
                   f"{ctx.lab.number}` arms the drills again")
    ctx.trace_timeout = min(ctx.trace_timeout, TRACE_TIMEOUT)  # its send has no consumer
    result = ctx.flow(name)
    missing = [r for r in result.results if r.missing]
    if not missing:
        raise Fail(f"the flow check of {name} misses no step: the crash did not stop it")
    first = missing[0]
    given = _step_answer(ctx, "vm5-step")
    if given != first.step.number:
        raise Fail(f"step {given} is not where your boot stopped: the first MISSING step "
                   "of its flow check is (no span ends in ERROR: the process died)")
    service = _service(ctx.answer("vm5-service"))
    if service != _service(first.step.source):
        raise Fail(f"{service!r} did not die: whose queue did the scheduler's cast go to, "
                   "and which service should have taken it off?")
