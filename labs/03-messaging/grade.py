"""Lab 03: the casts and calls of the learner's boot, read from its trace.

Each answer is an id only the learner's own boot carries: the message id of
step 12's cast, the correlation id of step 14's call and of the call number
drawn for this attempt, the span id of step 17's reply. They are the messaging
attributes of the spans the flow check names, on whichever broker carried them:
the checks hold on the lab cloud's in-memory broker and on RabbitMQ alike.
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


@check("the message cast to the compute host, step 12 (answer compute-message)")
def compute_message(ctx):
    """Step 12 is the table's hybrid: Grizzly's scheduler cast run_instance, novalab's
    casts build_and_run_instance (the conductor's, Juno on); an answer naming a method
    is told which one this trace cast, and the table's era's why not."""
    trace, span = _step(ctx, 12)
    given = ctx.answer("compute-message")
    if given == span.get(attr.MESSAGING_MESSAGE_ID):
        return
    cast = span.get(attr.RPC_METHOD)
    if given == "run_instance" and cast != given:
        raise Fail(f"run_instance is what Grizzly's scheduler cast; step 12 is the table's "
                   f"hybrid: novalab's scheduler casts {cast}, which upstream's conductor "
                   "sends since Juno. Answer the message id of the cast your trace shows")
    if given == cast:
        raise Fail(f"{cast} is the method every boot casts at step 12: answer the message id "
                   "of yours (messaging.message.id on its span)")
    other = next((s.get(attr.RPC_METHOD) for s in trace
                  if s.get(attr.MESSAGING_MESSAGE_ID) == given), None)
    raise Fail(f"{given!r} is " + (f"the id of another message ({other})" if other else
                                   "no message id of your boot")
               + ": read messaging.message.id on step 12's span")


def _conductor_calls(trace) -> list:
    return sorted((s for s in trace if s.service == "nova-compute" and s.kind == "PRODUCER"
                   and s.get(attr.NOVALAB_RPC_STYLE) == "call"
                   and s.get(attr.RPC_SERVICE) == "conductor"), key=lambda s: s.start_ns)


def _correlation(ctx, key: str, span, what: str, trace) -> None:
    wanted = span.get(attr.MESSAGING_CONVERSATION_ID)
    given = ctx.answer(key)
    if given != wanted:
        other = any(s.get(attr.MESSAGING_CONVERSATION_ID) == given for s in trace)
        raise Fail(f"{given!r} is " + ("the correlation id of another call" if other else
                                       "no correlation id of your trace")
                   + f": read messaging.message.conversation_id on {what}")


@check("the correlation id of the call at step 14 (answer correlation-id)")
def correlation_id(ctx):
    trace, span = _step(ctx, 14)
    _correlation(ctx, "correlation-id", span, "step 14's span", trace)


@check("the conductor's reply to that call, step 17 (answer reply-span)")
def reply_span(ctx):
    trace, span = _step(ctx, 17)
    given = ctx.answer("reply-span").lower()
    if given != span.span_id:
        raise Fail(f"{given!r} is not the span of step 17 in your boot: the conductor's "
                   "`send reply_...` with step 14's correlation id (its span id ends the "
                   "step's line in the flow check)")


@check("the call to the conductor your guide names (answer call-correlation-id)")
def call_correlation_id(ctx):
    trace, _ = _step(ctx, 13)
    number = int(ctx.parameters.get("call", 1))
    calls = _conductor_calls(trace)
    if len(calls) < number:
        raise Fail(f"your boot has {len(calls)} calls from nova-compute to the conductor, "
                   f"not {number}: boot as the guide says")
    _correlation(ctx, "call-correlation-id", calls[number - 1],
                 f"nova-compute's call number {number} (`send conductor`, style call, in the "
                 "order they were sent)", trace)
