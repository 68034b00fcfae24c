"""Lab 03: the casts and calls of the learner's boot, read from its trace.

Each answer is compared with the messaging attributes of the spans the flow
check names in the learner's own trace (steps 12, 14 and 17), on whichever
broker carried them: the checks hold on the lab cloud's in-memory broker and on
RabbitMQ alike.
"""

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr


@check("{server} is ACTIVE and its trace matches every step it implies")
def boot_is_whole(ctx):
    ctx.require_active(ctx.names["server"], "boot it (step 2 of the guide)")
    ctx.require_whole_boot(ctx.names["server"])


def _step(ctx, number: int):
    result = ctx.flow(ctx.names["server"])
    step = result.result(number)
    if not step.matched:
        raise Fail(f"step {number} is not in the trace of your boot of {ctx.names['server']}: "
                   "`novalab flow check --server NAME` says why")
    return result.trace, step.span


@check("the broker that carried your messages (answer broker)")
def broker(ctx):
    trace, _ = _step(ctx, 12)
    systems = {str(s.get(attr.MESSAGING_SYSTEM)) for s in trace if s.get(attr.MESSAGING_SYSTEM)}
    given = ctx.answer("broker")
    if given.lower() not in {s.lower() for s in systems}:
        raise Fail(f"{given!r} carried none of your boot's messages: read messaging.system on "
                   "any send or process span (the flow check's last note names it too)")


@check("the method cast to the compute host, step 12 (answer compute-method)")
def compute_method(ctx):
    """What the learner's trace cast. Step 12 is the table's hybrid: Grizzly's scheduler
    cast run_instance, novalab's casts build_and_run_instance (the conductor's, Juno on);
    the table's era's answer is told why it is not this trace's."""
    _, span = _step(ctx, 12)
    given = ctx.answer("compute-method")
    cast = span.get(attr.RPC_METHOD)
    if given == "run_instance" and cast != given:
        raise Fail(f"run_instance is what Grizzly's scheduler cast; step 12 is the table's "
                   f"hybrid: novalab's scheduler casts {cast}, which upstream's conductor "
                   "sends since Juno. Answer what your trace cast: its rpc.method")
    if given != cast:
        raise Fail(f"{given!r} is not the method of step 12's cast: read its rpc.method")


@check("the queue that cast went to (answer compute-queue)")
def compute_queue(ctx):
    _, span = _step(ctx, 12)
    key = span.get(attr.MESSAGING_ROUTING_KEY)
    given = ctx.answer("compute-queue")
    if given != key:
        hint = " (the topic alone reaches any host; this cast went to one)" \
            if key and given == key.split(".")[0] else ""
        raise Fail(f"{given!r} is not where step 12's cast went{hint}: read its "
                   "messaging.rabbitmq.destination.routing_key")


def _conductor_calls(trace) -> list:
    return [s for s in trace if s.service == "nova-compute" and s.kind == "PRODUCER"
            and s.get(attr.NOVALAB_RPC_STYLE) == "call" and s.get(attr.RPC_SERVICE) == "conductor"]


@check("nova-compute's calls to the conductor (answer conductor-calls)")
def conductor_calls(ctx):
    trace, build = _step(ctx, 13)
    calls = _conductor_calls(trace)
    during = [s for s in calls if trace.is_under(s, build)]
    given = ctx.answer("conductor-calls")
    if not given.isdigit() or int(given) not in (len(calls), len(during)):
        raise Fail(f"{given!r} is not how many times nova-compute called the conductor in your "
                   "trace: count its PRODUCER spans `send conductor` (style call)")


@check("the queue the conductor's replies went to (answer reply-queue)")
def reply_queue(ctx):
    trace, span = _step(ctx, 17)
    queues = {span.get(attr.MESSAGING_ROUTING_KEY)} | {
        s.get(attr.MESSAGING_DESTINATION_NAME) for s in trace
        if s.service == "nova-compute" and s.kind == "CONSUMER"
        and s.get(attr.NOVALAB_RPC_STYLE) == "reply"}
    given = ctx.answer("reply-queue")
    if given not in queues:
        raise Fail(f"{given!r} is not nova-compute's reply queue in your trace: read the "
                   "routing key of step 17's span (send reply_...)")


@check("the correlation id of the call at step 14 (answer correlation-id)")
def correlation_id(ctx):
    trace, span = _step(ctx, 14)
    wanted = span.get(attr.MESSAGING_CONVERSATION_ID)
    given = ctx.answer("correlation-id")
    if given != wanted:
        other = any(s.get(attr.MESSAGING_CONVERSATION_ID) == given for s in trace)
        raise Fail(f"{given!r} is " + ("the correlation id of another call" if other else
                                       "no correlation id of your trace")
                   + ": read messaging.message.conversation_id on step 14's span")
