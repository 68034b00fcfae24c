"""Lab 18: three servers on three compute hosts, and where one boot's time went.

Every measure is read from the trace of the request that created the server: the
request id of its ``create`` instance action (``openstack server event list``),
and in that trace the spans under nova-api's ``POST /v2.1/servers``, which end
before the server is ACTIVE (the client's polls and the guest's metadata reads
are requests of their own). There: the host of the nova-compute spans (their
resource's ``host.name``), the scheduler's ``FilterScheduler._schedule`` span
and its weigh event, the ``select_destinations`` span, nova-compute's calls to
the conductor (``send conductor`` PRODUCER spans, ``novalab.rpc.style`` call,
each answered by a ``receive reply_...`` CONSUMER span under the same parent)
and the SQL spans of each Nova service. Answers are compared with those spans,
never with constants: every class's servers land on the same hosts and run the
same calls and statements, so what is asked is the spans (ids) that did, and
durations within 20% (or 2 ms).
"""

import re

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

SERVERS = ("a", "b", "c")
NOVA = ("nova-api", "nova-scheduler", "nova-conductor", "nova-compute")
SCHEDULE = "FilterScheduler._schedule"
SELECT = "FilterScheduler.select_destinations"


def _create(ctx, key: str) -> list:
    """The spans of the request that created server ``key``: nova-api's answer to
    ``POST /servers`` and every span under it."""
    name = ctx.names[key]
    server = ctx.require_active(name, "boot it (step 2 of the guide)")
    cache = ("create", server["id"])
    if cache not in ctx._boots:
        actions = ctx.api.get("compute", f"/servers/{server['id']}/os-instance-actions")
        created = [a for a in actions["instanceActions"] if a["action"] == "create"]
        if not created:
            raise Fail(f"{name} has no create action (`openstack server event list {name}`)")
        request_id = created[0]["request_id"]
        trace, answered = ctx.request_trace(request_id, f"`openstack server event list {name}`")
        api = [s for s in answered if s.service == "nova-api"]
        if not api:
            raise Fail(f"the trace of {request_id} has no nova-api span that answered it")
        ctx._boots[cache] = [api[0], *trace.descendants(api[0])]
        ctx._boots[("tree", server["id"])] = trace
    return ctx._boots[cache]


def _trace(ctx, key: str):
    """The whole trace the create request of ``key`` is in (for parents)."""
    _create(ctx, key)
    return ctx._boots[("tree", ctx.require_server(ctx.names[key])["id"])]


def _built_on(ctx, key: str) -> str:
    """The host.name of the nova-compute spans of the boot of ``key`` (one host)."""
    hosts = {s.host for s in _create(ctx, key) if s.service == "nova-compute"}
    if len(hosts) != 1:
        raise Fail(f"the create request of {ctx.names[key]} has nova-compute spans of "
                   f"{len(hosts)} hosts ({', '.join(sorted(map(str, hosts)))}), not one")
    return hosts.pop()


def _named(ctx, key: str, span_name: str):
    found = [s for s in _create(ctx, key) if s.service == "nova-scheduler" and s.name == span_name]
    if not found:
        raise Fail(f"the create request of {ctx.names[key]} has no nova-scheduler {span_name} "
                   "span: was it scheduled?")
    return found[0]


def _calls(ctx, key: str) -> list[tuple]:
    """nova-compute's calls to the conductor in the boot of ``key``: (send span, its
    reply's receive span, or None)."""
    spans = _create(ctx, key)
    trace = _trace(ctx, key)
    calls = []
    for span in spans:
        if (span.service == "nova-compute" and span.kind == "PRODUCER"
                and span.get(attr.RPC_SERVICE) == "conductor"
                and span.get(attr.NOVALAB_RPC_STYLE) == "call"):
            parent = trace.parent(span)
            replies = [r for r in (trace.children(parent) if parent else ())
                       if r.kind == "CONSUMER" and r.get(attr.NOVALAB_RPC_STYLE) == "reply"
                       and r.start_ns >= span.start_ns
                       and r.get(attr.RPC_METHOD) == span.get(attr.RPC_METHOD)]
            calls.append((span, replies[0] if replies else None))
    return calls


def _list(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text.strip()) if part]


def _ms(text: str) -> float:
    found = re.search(r"\d+(?:\.\d+)?", text.replace(",", "."))
    if not found:
        raise Fail(f"{text!r} is not a number of milliseconds")
    return float(found.group())


def _near(given: float, measured_ms: float) -> bool:
    return abs(given - measured_ms) <= max(0.2 * measured_ms, 2.0)


@check("{a}, {b} and {c} are ACTIVE, each built on a host of its own")
def three_hosts(ctx):
    hosts = {}
    for key in SERVERS:
        server = ctx.require_active(ctx.names[key], "boot it (step 2 of the guide)")
        shown = ctx.admin_api.get("compute", f"/servers/{server['id']}")["server"]
        traced = _built_on(ctx, key)
        if shown.get("OS-EXT-SRV-ATTR:host") != traced:
            raise Fail(f"{server['name']} is on {shown.get('OS-EXT-SRV-ATTR:host')}, and its "
                       f"boot's nova-compute spans say {traced}")
        hosts[key] = traced
    considered = _named(ctx, "c", SCHEDULE).get(attr.NOVA_SCHEDULER_HOSTS_CONSIDERED) or 0
    if considered < 3:
        raise Fail(f"nova-scheduler considered {considered} host(s) for {ctx.names['c']}: this "
                   "lab needs the lab cloud of three compute hosts (`novalab lab start 18`)")
    if len(set(hosts.values())) != len(SERVERS):
        raise Fail(f"your servers share hosts ({', '.join(hosts.values())}): boot them one "
                   "after the other, each with --wait, and the RAM weigher spreads them "
                   "(`novalab lab reset 18` to start over)")


def _cast(ctx, key: str):
    """nova-scheduler's cast of the build of ``key`` to its host's queue (``send
    compute.<host>``), in the create request of ``key``."""
    host = _built_on(ctx, key)
    casts = [s for s in _create(ctx, key) if s.service == "nova-scheduler"
             and s.kind == "PRODUCER" and s.name == f"send compute.{host}"]
    if not casts:
        raise Fail(f"the create request of {ctx.names[key]} has no cast of nova-scheduler to "
                   f"compute.{host}")
    return casts[0]


@check("the scheduler's cast of each of {a}, {b}, {c} to its host (answer hosts)")
def hosts(ctx):
    casts = [_cast(ctx, key).span_id for key in SERVERS]
    given = [g.lower() for g in _list(ctx.answer("hosts"))]
    if given != casts:
        raise Fail(f"{', '.join(given)} are not the spans of nova-scheduler's casts to the "
                   "hosts that built your servers, in the order a, b, c: the PRODUCER span "
                   "`send compute.<host>` of each boot (the host.name of its nova-compute "
                   "spans says which host)")


@check("the span that weighed the hosts for {c} (answer weighed)")
def weighed(ctx):
    span = _named(ctx, "c", SCHEDULE)
    weighs = [e.attributes for e in span.events if e.name == "weigh"]
    if not weighs:
        raise Fail(f"no weigh event in the boot of {ctx.names['c']}")
    order = [str(h) for h in weighs[0].get(attr.NOVA_SCHEDULER_WEIGHED_HOSTS) or ()]
    if order[0] != _built_on(ctx, "c"):
        raise Fail(f"{ctx.names['c']} was not built on the host weighed first ({order[0]})")
    given = ctx.answer("weighed").lower()
    if given != span.span_id:
        raise Fail(f"{given!r} is not the span whose weigh event ranked the hosts for "
                   f"{ctx.names['c']} ({SCHEDULE} in its create request)")


@check("how long select_destinations took for {a} (answer select-ms)")
def select_ms(ctx):
    took = _named(ctx, "a", SELECT).duration_ns / 1e6
    given = _ms(ctx.answer("select-ms"))
    if not _near(given, took):
        raise Fail(f"{given:g} ms is not within 20% of the {SELECT} span of the create request "
                   f"of {ctx.names['a']}")


@check("nova-compute's slowest round trip to nova-conductor for {a} (answer slowest-call)")
def slowest_call(ctx):
    calls = [(send, reply) for send, reply in _calls(ctx, "a") if reply is not None]
    if not calls:
        raise Fail(f"the create request of {ctx.names['a']} has no call of nova-compute to the "
                   "conductor with its reply: is the trace still arriving? Grade again")
    send, _ = max(calls, key=lambda call: call[1].duration_ns)
    given = ctx.answer("slowest-call").lower()
    if given != send.span_id:
        raise Fail(f"{given!r} is not the `send conductor` span of the call whose reply "
                   f"nova-compute waited on longest in the create request of "
                   f"{ctx.names['a']} (of its {len(calls)} calls)")


@check("how long nova-compute waited for the conductor for {a} (answer conductor-ms)")
def conductor_ms(ctx):
    calls = _calls(ctx, "a")
    if not calls or any(reply is None for _, reply in calls):
        raise Fail(f"the create request of {ctx.names['a']} has a call to the conductor without "
                   "its reply: is the trace still arriving? Grade again")
    # From each send to the end of its reply, or the replies' spans alone: the two
    # differ by the sends' own few microseconds each, and either is a fair reading.
    trips = sum(reply.end_ns - send.start_ns for send, reply in calls) / 1e6
    waits = sum(reply.duration_ns for _, reply in calls) / 1e6
    given = _ms(ctx.answer("conductor-ms"))
    if not (_near(given, trips) or _near(given, waits)):
        raise Fail(f"{given:g} ms is not within 20% of how long nova-compute's {len(calls)} "
                   f"calls to the conductor took in the create request of {ctx.names['a']}: "
                   "add up the durations of its `receive reply_...` spans")


@check("the slowest SQL statement of the create request of {a} (answer sql)")
def sql(ctx):
    statements = [s for s in _create(ctx, "a") if s.service in NOVA
                  and (s.get(attr.DB_SYSTEM_NAME) or s.get(attr.DB_SYSTEM))]
    if any(s.service == "nova-compute" for s in statements):
        raise Fail("nova-compute ran SQL itself: a compute host reaches the database only "
                   "through the conductor")
    slowest = max(statements, key=lambda s: s.duration_ns)
    given = ctx.answer("sql").lower()
    if given != slowest.span_id:
        raise Fail(f"{given!r} is not the slowest of the {len(statements)} SQL spans of Nova's "
                   f"services in the create request of {ctx.names['a']} (spans with a "
                   "db.system.name)")
