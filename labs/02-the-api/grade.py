"""Lab 02: nova-api's answer, from the learner's refused request and their own boot.

The 400 is found by the request id the learner names; everything else is read
from the trace of their boot of {server}: the create's request id (step 4),
the state written with the row (step 5), the race of steps 7 and 8, the states
each write recorded, and the client's polls (55).
"""

import re

from novalab.diagrams.flows.rules import http_server, sql_statement
from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr
from novalab.tracing.model import Trace

_CREATE = http_server("POST", r"/servers$")
_POLL = http_server("GET", r"/servers/<server_id>$|/servers/[0-9a-f-]{36}$")
_EMPTY = {"none", "null", "-", "''", '""'}


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


@check("the task_state written with the row, step 5 (answer row-task-state)")
def row_task_state(ctx):
    result = _flow(ctx, 5)
    step = result.result(5).span
    owner = next((a for a in result.trace.ancestors(step) if a.get(attr.NOVA_TASK_STATE)), None)
    if owner is None:
        raise Fail("no span above step 5 records the task_state it wrote")
    given = ctx.answer("row-task-state")
    if given.lower() != str(owner.get(attr.NOVA_TASK_STATE)).lower():
        raise Fail(f"{given!r} is not what nova-api wrote: read nova.instance.task_state on "
                   f"{owner.name}, the span above step 5")


@check("did the 202 leave before step 8? (answer answered-first)")
def answered_first(ctx):
    result = _flow(ctx, 7, 8)
    first = result.result(7).time_ns < result.result(8).time_ns
    given = ctx.answer("answered-first").lower()
    if given not in ("yes", "no"):
        raise Fail(f"{given!r}: answer yes or no")
    if (given == "yes") != first:
        raise Fail("that is not what your trace shows: compare the times (+N ms) of steps 7 "
                   "and 8 in the flow check")


def _states(text: str) -> list[str]:
    words = [w for w in re.split(r"[\s,;>]+|->|→", text.lower()) if w and w not in _EMPTY]
    return [w for i, w in enumerate(words) if i == 0 or w != words[i - 1]]


@check("the task_states of your build, in order (answer task-states)")
def task_states(ctx):
    trace = ctx.boot(ctx.names["server"])
    recorded = _states(" ".join(str(s.get(attr.NOVA_TASK_STATE) or "-") for s in _writes(trace)))
    if not recorded:
        raise Fail("your trace records no task_state: was the server booted on this cloud?")
    given = _states(ctx.answer("task-states"))
    if given != recorded:
        missing = [s for s in recorded if s not in given]
        raise Fail(f"{' '.join(given) or 'nothing'} is not the order your trace recorded"
                   + (f" ({len(missing)} state(s) missing)" if missing else "")
                   + ": read nova.instance.task_state on each span that wrote the row "
                     "(INSERT or UPDATE instances below it), in the order they began")


@check("how many polls your client sent until it saw ACTIVE (answer polls)")
def polls(ctx):
    trace = ctx.boot(ctx.names["server"])
    create = next((s for s in trace if s.service == "nova-api" and _CREATE(s)), None)
    server_id = ctx.require_server(ctx.names["server"])["id"]
    gets = [s for s in trace if s.service == "nova-api" and _POLL(s) and create is not None
            and str(s.get(attr.URL_PATH, "")).endswith(f"/servers/{server_id}")
            and s.start_ns > create.start_ns]
    active = [s.end_ns for s in _writes(trace) if s.get(attr.NOVA_VM_STATE) == "active"]
    if not gets or not active:
        raise Fail("your boot's trace has no poll that saw ACTIVE: boot with --wait")
    until = next((i + 1 for i, s in enumerate(gets) if s.start_ns >= active[-1]), len(gets))
    given = ctx.answer("polls")
    if not given.isdigit() or not until <= int(given) <= len(gets):
        raise Fail(f"{given!r} is not how many times your client polled: count nova-api's "
                   "GET /v2.1/servers/<server_id> spans whose url.path ends with your "
                   "server's id")
