"""Lab 02: nova-api's answer, from the learner's refused request and their own boot.

The 400 is found by the request id the learner names; everything else is read
from the trace of their boot of {server}: the create's request id (step 4),
the span that wrote the row (step 5), the race of steps 7 and 8 in milliseconds,
the write of the task_state drawn for this attempt, and the poll that first saw
ACTIVE (55): values no other boot has.
"""

from novalab.diagrams.flows.rules import http_server, sql_statement
from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr
from novalab.tracing.model import Trace

_CREATE = http_server("POST", r"/servers$")
_POLL = http_server("GET", r"/servers/<server_id>$|/servers/[0-9a-f-]{36}$")


@check("nova-api refused your bad body with 400 (answer bad-request)")
def bad_request(ctx):
    given = ctx.answer("bad-request")
    _, answered = ctx.request_trace(
        given, "the x-openstack-request-id header of nova's answer (curl -si)")
    spans = [s for s in answered if s.service == "nova-api" and _CREATE(s)]
    if not spans:
        raise Fail(f"{given} is not a POST /servers nova-api answered: send the body to "
                   "nova's /servers (step 2 of the guide)")
    status = spans[0].get(attr.HTTP_RESPONSE_STATUS_CODE)
    if status != 400:
        raise Fail(f"nova-api answered {status} to {given}, not 400: leave flavorRef out of "
                   "the body")


@check("{server} is ACTIVE and its trace matches every step it implies")
def boot_is_whole(ctx):
    ctx.require_active(ctx.names["server"], "boot it (step 4 of the guide)")
    ctx.require_whole_boot(ctx.names["server"])


def _flow(ctx, *numbers):
    result = ctx.flow(ctx.names["server"])
    for number in numbers:
        if not result.result(number).matched:
            raise Fail(f"step {number} is not in the trace of your boot of "
                       f"{ctx.names['server']}: `novalab flow check --server NAME` says why")
    return result


@check("the request id of your create (answer create-request-id)")
def create_request_id(ctx):
    span = _flow(ctx, 4).result(4).span
    given = ctx.answer("create-request-id")
    if given != span.get(attr.OPENSTACK_REQUEST_ID):
        raise Fail(f"{given!r} is not the request id of the POST that created "
                   f"{ctx.names['server']}: `openstack server event list NAME`, action create")


def _writes(trace: Trace) -> list:
    """The spans that wrote the instance row (an INSERT or UPDATE of instances below them,
    in their own service) and recorded the state they wrote, in the order they began."""
    found = []
    for span in trace:
        if span.get(attr.NOVA_VM_STATE) is None:
            continue
        if any(sql_statement(s) in (("INSERT", "instances"), ("UPDATE", "instances"))
               for s in trace.descendants(span) if s.service == span.service):
            found.append(span)
    return found


def _span_id(ctx, key: str) -> str:
    return ctx.answer(key).lower()


@check("the span that wrote the row and its first states, step 5 (answer row-span)")
def row_span(ctx):
    result = _flow(ctx, 5)
    step = result.result(5).span
    owner = next((a for a in result.trace.ancestors(step) if a.get(attr.NOVA_TASK_STATE)), None)
    if owner is None:
        raise Fail("no span above step 5 records the task_state it wrote")
    given = _span_id(ctx, "row-span")
    if given != owner.span_id:
        raise Fail(f"{given!r} is not the span above step 5 that records the vm_state and "
                   "task_state nova-api wrote (nova.instance.task_state): its span id, from "
                   "`novalab trace show --server NAME --attributes`")


@check("steps 7 and 8: which came first, and by how much (answer race-ms)")
def race_ms(ctx):
    result = _flow(ctx, 7, 8)
    gap = result.offset_ms(result.result(8)) - result.offset_ms(result.result(7))
    value = ctx.answer_ms("race-ms", " (negative when step 8 came first)")
    if abs(value - gap) > 0.01:
        raise Fail(f"{value:g} ms is not step 8's time minus step 7's in your boot: read both "
                   "(+N ms) in the flow check, to the microsecond")


@check("the write that set the task_state drawn for you (answer state-span)")
def state_span(ctx):
    wanted = str(ctx.parameters.get("state", ""))
    trace = ctx.boot(ctx.names["server"])
    writes = [s for s in _writes(trace) if s.get(attr.NOVA_TASK_STATE) == wanted]
    if not writes:
        raise Fail(f"no write of your boot recorded task_state {wanted!r}")
    given = _span_id(ctx, "state-span")
    if given not in {s.span_id for s in writes}:
        other = next((s.get(attr.NOVA_TASK_STATE) for s in _writes(trace)
                      if s.span_id == given), None)
        raise Fail(f"{given!r} is " + (f"the write of task_state {other}" if other else
                                       "not a span that wrote your instance's row")
                   + f": find the span that wrote {wanted} (nova.instance.task_state, with "
                     "an UPDATE instances below it) and answer its span id")


@check("the first poll that saw {server} ACTIVE (answer active-poll)")
def active_poll(ctx):
    trace = ctx.boot(ctx.names["server"])
    server_id = ctx.require_server(ctx.names["server"])["id"]
    polls = sorted((s for s in trace if s.service == "nova-api" and _POLL(s)
                    and str(s.get(attr.URL_PATH, "")).endswith(f"/servers/{server_id}")),
                   key=lambda s: s.start_ns)
    saw = [p for p in polls if any(d.get(attr.NOVA_VM_STATE) == "active"
                                   for d in trace.descendants(p))]
    if not saw:
        raise Fail("no poll of your boot saw ACTIVE: boot with --wait")
    given = ctx.answer("active-poll")
    if given != saw[0].get(attr.OPENSTACK_REQUEST_ID):
        late = any(given == p.get(attr.OPENSTACK_REQUEST_ID) for p in saw)
        raise Fail(f"{given!r} is " + ("a later poll" if late else "not a poll of your boot")
                   + ": the first GET /v2.1/servers/<server_id> whose ServersController.show "
                     "records nova.instance.vm_state = active; answer its request id")
