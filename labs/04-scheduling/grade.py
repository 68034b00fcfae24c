"""Lab 04: where the learner's servers landed, and why, read from their own boots.

Every check reads the ``FilterScheduler._schedule`` span of the boot it is about:
its ``filter`` events (which hosts each filter passed and rejected, and for a
learner's filter the file it came from) and its ``weigh`` event (the hosts best
first, with their free RAM, and the chosen one); the host each server really got
from the admin API (``OS-EXT-SRV-ATTR:host``); the learner's filter file and the
cloud's nova.conf. Answers are ids of those spans and messages (the host and the filter are the same
for every learner's lab cloud: they are read there, not asked).
"""

from pathlib import Path

from novalab.labs.grading import Fail, check
from novalab.reference.nova.scheduler.conf import CONF_NAME, parse
from novalab.reference.nova.scheduler.exception import SchedulerFilterFileInvalid
from novalab.reference.nova.scheduler.loadables import load_filter_file
from novalab.tracing import attributes as attr

SCHEDULE = "FilterScheduler._schedule"


def _active(ctx, key: str, what: str) -> dict:
    return ctx.require_active(ctx.names[key], what)


def _host(ctx, server: dict) -> str | None:
    """The compute host the server is on (admins see it; the learner reads the trace)."""
    shown = ctx.admin_api.get("compute", f"/servers/{server['id']}")["server"]
    return shown.get("OS-EXT-SRV-ATTR:host")


def _schedule(ctx, key: str):
    """The scheduler's decision span in the trace of the boot of server ``key``."""
    name = ctx.names[key]
    spans = [s for s in ctx.boot(name) if s.service == "nova-scheduler" and s.name == SCHEDULE]
    if not spans:
        raise Fail(f"the trace of the boot of {name} has no {SCHEDULE} span: did nova-scheduler "
                   "take it (step 8 of the flow)? `novalab flow check --server NAME`")
    return spans[0]


def _events(span, name: str) -> list:
    return [e.attributes for e in span.events if e.name == name]


def _weigh(ctx, key: str) -> dict:
    weighs = _events(_schedule(ctx, key), "weigh")
    if not weighs:
        raise Fail(f"no weigh event in the boot of {ctx.names[key]}: no host passed the "
                   "filters, so none was weighed")
    return weighs[0]


@check("{first} and {server} are ACTIVE")
def servers_active(ctx):
    _active(ctx, "first", "boot it with the flavor m1.small (step 2 of the guide)")
    _active(ctx, "server", "boot it after {first} (step 2)".format(**ctx.names))


@check("{server} went to the host with the most free RAM, as its weigh event shows")
def most_free_ram(ctx):
    span = _schedule(ctx, "server")
    weigh = _weigh(ctx, "server")
    hosts = list(weigh.get(attr.NOVA_SCHEDULER_WEIGHED_HOSTS) or ())
    free = list(weigh.get(attr.NOVA_SCHEDULER_FREE_RAM_MB) or ())
    chosen = weigh.get(attr.NOVA_SCHEDULER_CHOSEN_HOST)
    name = ctx.names["server"]
    if (span.get(attr.NOVA_SCHEDULER_HOSTS_CONSIDERED) or 0) < 2:
        raise Fail(f"nova-scheduler considered one host for {name}: this lab needs the lab "
                   "cloud of two compute hosts (`novalab lab start 04` brings it up)")
    if len(hosts) < 2:
        raise Fail(f"only {', '.join(hosts) or 'no host'} passed the filters for {name}, so "
                   "nothing was weighed: boot it with the default filters, before you enable "
                   "your own")
    if len(set(free)) == 1:
        raise Fail(f"every host had {free[0]} MB free when {name} was scheduled: the weigher "
                   f"had nothing to tell them apart. Boot {ctx.names['first']} (m1.small) "
                   f"first, then {name} again")
    richest = hosts[free.index(max(free))]
    if chosen != richest:
        raise Fail(f"the scheduler chose {chosen} for {name}, not the host with the most free "
                   f"RAM: is ram_weight_multiplier in nova.conf still above 0?")
    if _host(ctx, ctx.require_server(name)) != chosen:
        raise Fail(f"{name} is not on the host its weigh event chose ({chosen})")


@check("the cast that sent {server} to its host (answer cast-message)")
def cast_message(ctx):
    step = ctx.flow(ctx.names["server"]).result(12)
    if not step.matched:
        raise Fail("step 12 is missing from the trace of your boot of "
                   f"{ctx.names['server']}: was it scheduled?")
    given = ctx.answer("cast-message")
    if given != step.span.get(attr.MESSAGING_MESSAGE_ID):
        queue = step.span.get(attr.MESSAGING_ROUTING_KEY)
        raise Fail(f"{given!r} is not the message step 12 of your boot cast to {queue}: "
                   "answer its messaging.message.id")


def _filter_file(ctx) -> Path:
    path = ctx.workdir / ctx.names["filter_file"]
    if not path.exists():
        raise Fail(f"no {path}: write your filter there (step 4 of the guide)")
    return path


@check("your filter in {filter_file} loads and is enabled in nova.conf")
def filter_enabled(ctx):
    path = _filter_file(ctx)
    conf = parse(ctx.cloud.state_dir / CONF_NAME)
    if ctx.learner_folder.absolute() not in [d.absolute() for d in conf.filter_dirs]:
        raise Fail("filter_dirs in nova.conf does not name your lab folder any more: "
                   "`novalab lab start 04` sets it again")
    try:
        classes = load_filter_file(path)
    except SchedulerFilterFileInvalid as exc:
        raise Fail(f"{path.name} does not load: {exc}") from exc
    names = [cls.__name__ for cls in classes]
    if not names:
        raise Fail(f"{path.name} defines no subclass of filters.BaseHostFilter")
    if not any(name in conf.enabled_filters for name in names):
        raise Fail(f"{', '.join(names)} is not in enabled_filters of {conf.path}: nova-scheduler "
                   "runs only the filters named there (`novalab scheduler filters`)")


@check("{pinned} landed on a host your filter passed, and your filter rejected another")
def pinned_by_filter(ctx):
    _filter_file(ctx)
    # The scheduler ran it from the learner's own folder; the grade reads a copy.
    path = (ctx.learner_folder / ctx.names["filter_file"]).resolve()
    server = _active(ctx, "pinned", "boot it once your filter is enabled (step 5)")
    name = server["name"]
    mine = [e for e in _events(_schedule(ctx, "pinned"), "filter")
            if e.get(attr.NOVA_SCHEDULER_FILTER_FILE)
            and Path(str(e.get(attr.NOVA_SCHEDULER_FILTER_FILE))).resolve() == path]
    if not mine:
        raise Fail(f"no filter of {path.name} ran when {name} was scheduled: enable it in "
                   f"nova.conf, then boot {name} again")
    passed = list(mine[0].get(attr.NOVA_SCHEDULER_PASSED_HOSTS) or ())
    if not mine[0].get(attr.NOVA_SCHEDULER_REJECTED_HOSTS):
        raise Fail(f"your filter passed every host it was given for {name} ({', '.join(passed)})"
                   ": it decided nothing. Make it reject a host, then boot again")
    if _host(ctx, server) not in passed:
        raise Fail(f"{name} is on a host your filter did not pass")


@check("{nohost} found no valid host")
def no_valid_host(ctx):
    name = ctx.names["nohost"]
    server = ctx.require_server(name, "boot it so that no host passes the filters (step 6)")
    fault = (server.get("fault") or {}).get("message", "")
    if server["status"] != "ERROR":
        raise Fail(f"{name} is {server['status']}: a host passed every filter. Boot it so that "
                   "none does (step 6)")
    if "No valid host" not in fault:
        raise Fail(f"{name} failed for another reason than NoValidHost: {fault}")


@check("the decision that found no host for {nohost} (answer nohost-span)")
def nohost_span(ctx):
    span = _schedule(ctx, "nohost")
    emptied = [e.get(attr.NOVA_SCHEDULER_FILTER) for e in _events(span, "filter")
               if e.get(attr.NOVA_SCHEDULER_HOSTS_PASSED) == 0
               and (e.get(attr.NOVA_SCHEDULER_HOSTS_BEFORE) or 0) > 0]
    if not emptied:
        raise Fail(f"no filter returned 0 hosts in the boot of {ctx.names['nohost']}")
    given = ctx.answer("nohost-span").lower()
    if given != span.span_id:
        what = (f"the filter every such image meets ({emptied[0]})" if given == emptied[0].lower()
                else f"not the {SCHEDULE} span of {ctx.names['nohost']}'s boot")
        raise Fail(f"{given!r} is {what}: answer the span id of the decision whose filter "
                   "event (nova.scheduler.hosts_passed = 0) left no host")
