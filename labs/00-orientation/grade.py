"""Lab 00: the learner booted, drew their own boot, and read step 43 from its trace."""

from novalab.labs.grading import Fail, check


@check("{server} is ACTIVE")
def server_is_active(ctx):
    ctx.require_active(ctx.names["server"], "boot it (step 2 of the guide)")


@check("the trace of your boot of {server} matches every step it implies")
def boot_is_whole(ctx):
    ctx.require_whole_boot(ctx.names["server"])


@check("sequence.html in your lab folder is drawn from the trace of {server}")
def diagram_drawn(ctx):
    path = ctx.workdir / "sequence.html"
    if not path.exists():
        raise Fail(f"no {path}: `novalab diagram --server {ctx.names['server']} --format html "
                   f"-o sequence.html` in that folder (step 4)")
    trace = ctx.boot(ctx.names["server"])
    if trace.trace_id not in path.read_text(encoding="utf-8", errors="replace"):
        raise Fail(f"{path.name} is drawn from another trace, not from your boot "
                   f"({trace.trace_id})")


def _start_span(ctx):
    result = ctx.flow(ctx.names["server"])
    step = result.result(43)
    if not step.matched:
        raise Fail("step 43 is missing from your boot's trace: was the guest started?")
    return step.span


@check("the libvirt method that started your guest (answer start-method)")
def start_method(ctx):
    span = _start_span(ctx)
    method = str(span.get("rpc.method") or span.name.removeprefix("libvirt."))
    given = ctx.answer("start-method")
    if given.removeprefix("libvirt.").lower() != method.lower():
        raise Fail(f"{given!r} is not what your trace shows for step 43: read the span's "
                   "rpc.method (`novalab trace show --server NAME --attributes`)")


@check("the compute host that started it (answer host)")
def start_host(ctx):
    span = _start_span(ctx)
    given = ctx.answer("host")
    if given != span.host:
        raise Fail(f"{given!r} is not the host of step 43's span: the flow check names it "
                   "after the service (nova-compute@HOST)")
