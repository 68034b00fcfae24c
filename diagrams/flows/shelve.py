"""Shelve, offload and unshelve one server, as data, with one rule per step.

Seed 002 (``shared/seeds/002_*.txt``) follows ``nova shelve t2`` from the
client's ``POST /servers/{id}/action {"shelve": null}`` through nova-api's
``ShelveController._shelve`` and ``compute_api.shelve`` (the ``<name>-shelved``
snapshot image, then ``compute_rpcapi.shelve_instance``) to the compute host.
The steps after that are upstream Nova's (``nova/compute/manager.py``
``_shelve_instance``, ``_shelve_offload_instance``, ``_unshelve_instance``;
``nova/conductor/manager.py`` ``ComputeTaskManager.unshelve_instance``):

- shelve (1-13): nova-api saves ``shelving``, creates the image in Glance and
  casts ``shelve_instance`` to the host; the host powers the guest off,
  uploads its disk into the image and saves SHELVED; with
  ``shelved_offload_time = 0`` it offloads at once: ports unbound, guest
  destroyed, SHELVED_OFFLOADED with no host.
- unshelve (14-32): nova-api casts ``unshelve_instance`` to the conductor,
  which reads the shelved image, *calls* the scheduler's
  ``select_destinations`` and casts ``unshelve_instance`` to the chosen host;
  that host binds the ports, spawns from the shelved image, deletes it and
  saves ACTIVE.

Shelve and unshelve are two requests, so two traces: the table is checked on
one server's *shelve session*, the traces of its shelve (and shelveOffload)
and unshelve requests joined under one synthetic root (``session`` below;
``novalab flow check --flow shelve --server NAME`` asks the trace store for
it). See docs/decisions.md, "The shelve flow checks one server's shelve
session".

Rules find spans by what they are (service, kind, route, ``rpc.method``,
``nova.instance.action``, ``nova.instance.vm_state``), never by position. They
look below the step they follow, so extra spans (placement's HTTP calls on the
modern topology, the token checks, the instance-action events) change nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections.abc import Iterable

from novalab.diagrams.flows.model import (
    ASYNC,
    RETURN,
    SYNC,
    Condition,
    Flow,
    Interleave,
    Lifeline,
    Step,
)
from novalab.diagrams.flows.rules import (
    Query,
    any_of,
    client_to,
    consume,
    function,
    http_server,
    send,
    sql,
)
from novalab.diagrams.model import Span, Trace
from novalab.tracing import attributes as attr
from novalab.tracing.model import Link, frozen

LIFELINES = (
    Lifeline("Client", "actor", ("novalab-client",),
             "the client's spans; a request with no caller in the trace comes from here"),
    Lifeline("Nova.api", "service", ("nova-api",)),
    Lifeline("Database", "infra", (), "SQL CLIENT spans (db.system.name)"),
    Lifeline("RabbitMQ", "infra", (),
             "messaging PRODUCER/CONSUMER spans (messaging.system): the broker"),
    Lifeline("Nova-compute", "service", ("nova-compute",)),
    Lifeline("Libvirt", "infra", ("qemu-kvm",),
             "CLIENT spans with rpc.system=libvirt (peer.service=libvirt)"),
    Lifeline("Glance.api", "service", ("glance-api",)),
    Lifeline("Ceph", "service", ("ceph-rgw", "ceph-osd", "ceph-mon"),
             "the store behind Glance (novalab: the RADOS gateway's Swift API)"),
    Lifeline("Nova-conductor", "service", ("nova-conductor", "nova-super-conductor"),
             "nova-conductor's spans; on the modern topology the super conductor "
             "(nova-super-conductor) serves the unshelve and the cell conductor the host's "
             "saves"),
    Lifeline("Neutron-server", "service", ("neutron-server",)),
    Lifeline("Nova.scheduler", "service", ("nova-scheduler",)),
)

# number, source, target, description (what goes over the arrow), kind, answered step
_TABLE = (
    # -- shelve: one request (seed 002), then the compute host
    (1, "Client", "Nova.api", 'Shelve the instance: POST /servers/{id}/action {"shelve": null}',
     SYNC, None),
    (2, "Nova.api", "Database", "Save task_state shelving", SYNC, None),
    (3, "Nova.api", "Glance.api", "[REST] create the snapshot image <name>-shelved", SYNC, None),
    (4, "Nova.api", "RabbitMQ", "Rpc.cast shelve_instance to the instance's host", ASYNC, None),
    (5, "Nova.api", "Client", "Shelve request accepted (202)", RETURN, 1),
    (6, "Nova-compute", "RabbitMQ", "Subscribe shelve request", ASYNC, None),
    (7, "Nova-compute", "Libvirt", "Power off the guest", SYNC, None),
    (8, "Nova-compute", "Glance.api", "[REST] upload the guest's disk into the snapshot image",
     SYNC, None),
    (9, "Glance.api", "Ceph", "Store the image's data", SYNC, None),
    (10, "Nova-compute", "Nova-conductor", "Save vm_state SHELVED", SYNC, None),
    (11, "Nova-compute", "Neutron-server", "[REST] offload: unbind the ports from the host",
     SYNC, None),
    (12, "Nova-compute", "Libvirt", "Offload: destroy and undefine the guest", SYNC, None),
    (13, "Nova-compute", "Nova-conductor", "Save vm_state SHELVED_OFFLOADED, no host",
     SYNC, None),
    # -- unshelve: another request, through the conductor and the scheduler
    (14, "Client", "Nova.api",
     'Unshelve the instance: POST /servers/{id}/action {"unshelve": null}', SYNC, None),
    (15, "Nova.api", "Database", "Save task_state unshelving", SYNC, None),
    (16, "Nova.api", "RabbitMQ", "Rpc.cast unshelve_instance to the conductor", ASYNC, None),
    (17, "Nova.api", "Client", "Unshelve request accepted (202)", RETURN, 14),
    (18, "Nova-conductor", "RabbitMQ", "Subscribe unshelve request", ASYNC, None),
    (19, "Nova-conductor", "Glance.api", "[REST] read the shelved image", SYNC, None),
    (20, "Nova-conductor", "RabbitMQ", "Rpc.call select_destinations to the scheduler",
     SYNC, None),
    (21, "Nova.scheduler", "RabbitMQ", "Subscribe request for a host", ASYNC, None),
    (22, "Nova.scheduler", "Database", "Read the hosts (compute nodes)", SYNC, None),
    (23, "Nova.scheduler", "RabbitMQ", "Reply with the chosen host", ASYNC, None),
    (24, "Nova-conductor", "RabbitMQ", "Read the scheduler's answer", ASYNC, None),
    (25, "Nova-conductor", "RabbitMQ", "Rpc.cast unshelve_instance to the chosen host",
     ASYNC, None),
    (26, "Nova-compute", "RabbitMQ", "Subscribe unshelve request", ASYNC, None),
    (27, "Nova-compute", "Neutron-server", "[REST] bind the ports to this host", SYNC, None),
    (28, "Nova-compute", "Glance.api", "[REST] get the shelved image", SYNC, None),
    (29, "Nova-compute", "Ceph", "Download the shelved image's data", SYNC, None),
    (30, "Nova-compute", "Libvirt", "Start the guest from the shelved image", SYNC, None),
    (31, "Nova-compute", "Glance.api", "[REST] delete the shelved image", SYNC, None),
    (32, "Nova-compute", "Nova-conductor", "Save vm_state ACTIVE", SYNC, None),
)

NOTES = {
    1: "Seed 002: the client first asks Keystone for a token and looks the server up; "
       "each of those is a request (a trace) of its own, not part of this table. "
       "shelve is a server action: ShelveController._shelve (nova.instance.action = "
       "shelve).",
    3: "compute_api.shelve makes the image before it casts, so the snapshot already exists "
       "(queued, no data) when the request is answered; a volume-backed server has nothing "
       "local to keep and goes straight to the offload (steps 3, 8, 9 not expected).",
    4: "Seed 002's Icehouse nova-api casts to the host directly, as today's Nova still does: "
       "the conductor and the scheduler are not involved in a shelve.",
    7: "Upstream (and novalab) powers the guest off before it takes the snapshot, so the "
       "disk is consistent; a guest that is already off makes no shutdown call.",
    8: "LibvirtDriver.snapshot extracts the disk and uploads it through Glance's API, as a "
       "createImage does; task_state goes shelving_image_pending_upload, then "
       "shelving_image_uploading.",
    9: "novalab's Glance keeps images in the RADOS gateway (Swift API); upstream Glance with "
       "Ceph writes an RBD image (the rbd store) instead.",
    10: "The saves of the compute host are rpc.calls to nova-conductor. novalab names them "
        "with Grizzly's conductor RPC (instance_update), which predates shelve; upstream's "
        "shelve (Havana) saved with Instance.save(), which reaches the conductor as "
        "object_action. The step is the conductor's first span recording the new vm_state; "
        "steps 13 and 32 are saves of the same kind.",
    11: "shelved_offload_time 0 (the default) offloads at once, in the same request; -1 "
        "keeps the server SHELVED on its host until shelveOffload (an admin's request, "
        "joined into the session too). The ports stay the server's, with their addresses: "
        "only their binding to the host goes.",
    12: "The guest is gone from the host; volumes, if any, keep a bare Cinder reservation "
        "(_terminate_volume_connections swaps each attachment, not drawn).",
    13: "As upstream, a second save clears host and node: no RPC can reach the instance "
        "through a host now.",
    14: "A second request, hence a second trace: the session joins the two (see the module "
        "docstring).",
    16: "Unshelve has gone through the conductor since shelve came, in Havana "
        "(ComputeTaskManager.unshelve_instance): an offloaded server has no host to cast "
        "to. With cells (the modern topology) it is the super conductor's; the compute "
        "host's saves go to its cell's conductor.",
    19: "The conductor checks the shelved image exists (event get_image_info); without it "
        "the server goes to ERROR.",
    20: "An rpc.call: the conductor waits for the hosts. On the modern topology the scheduler "
        "also asks placement for allocation candidates and claims the server's resources "
        "there (HTTP calls below step 21, not drawn).",
    22: "The classic scheduler also saves the chosen host on the instance before it answers; "
        "upstream's compute host claims it (the resource tracker).",
    27: "setup_instance_network_on_host: the port's binding:host_id is set to the new host, "
        "which sends the DHCP and L2 agents to work as at boot.",
    28: "Spawn fetches the shelved image exactly as a boot fetches its image "
        "(nova.virt.images.fetch); the image is new, so it is never in the host's cache.",
    29: "novalab reads the image's object from the RADOS gateway; upstream Nova never does: "
        "with Ceph it clones the RBD image or downloads through Glance (drawn to Glance.api "
        "when that is what the trace shows).",
    30: "The instance keeps its own image_ref; only this spawn uses the shelved image.",
    31: "_delete_snapshot_of_shelved_instance: the snapshot was only a parking place.",
}

INTERLEAVE = (
    Interleave((6, 7, 8, 9, 10, 11, 12, 13), (5,),
               "the 202 goes back while the compute host already works on the cast"),
    Interleave(tuple(range(18, 33)), (17,),
               "the 202 goes back while the conductor already works on the cast"),
)

GLOBAL_NOTES = (
    "One server's shelve session: its shelve (and shelveOffload) and unshelve requests, each "
    "a trace of its own, joined under one synthetic root that links to each request's root "
    "(novalab.original_trace_id keeps where each span came from).",
    "The RabbitMQ lifeline stands for whatever broker carried the messages; messaging.system "
    "names it.",
)


# -- rules ----------------------------------------------------------------------------------

RULES = {}


def rule(number, after: int | None = None):
    """Register ``func`` as step ``number``'s rule. With ``after``, the step is looked for
    only below step ``after``'s span: without that step, this one is missing too (never
    taken from another request of the session)."""
    def register(func):
        if after is None:
            RULES[number] = func
            return func

        @functools.wraps(func)
        def anchored(q: Query):
            return func(q) if q.step(after) is not None else None
        RULES[number] = anchored
        return func
    return register


_ACTION = http_server("POST", r"/action$")
_LIBVIRT = client_to("libvirt", rpc_system="libvirt")


def _action_request(q: Query, action: str) -> Span | None:
    """nova-api's SERVER span of the client's POST .../action whose controller recorded
    ``nova.instance.action = action`` (ShelveController sets it)."""
    def is_action(span: Span) -> bool:
        return _ACTION(span) and any(d.get(attr.NOVA_INSTANCE_ACTION) == action
                                     for d in q.trace.descendants(span)
                                     if d.service == span.service)
    return q.request("Client", "Nova.api", server=is_action)


def _under_function(q: Query, span: Span, qualname: str) -> bool:
    is_it = function(qualname)
    return any(is_it(a) for a in q.trace.ancestors(span) if a.service == span.service)


def _saved(q: Query, vm_state: str, under: Span | None) -> Span | None:
    """nova-conductor's first span below ``under`` recording ``vm_state`` (the save)."""
    if under is None:
        return None
    return q.first("Nova-conductor", lambda s: s.get(attr.NOVA_VM_STATE) == vm_state,
                   under=under)


@rule(1)
def _shelve(q: Query):
    """nova-api's SERVER span for POST /v2.1/servers/<id>/action called by the client, below
    which ShelveController._shelve recorded nova.instance.action = shelve."""
    return q.found(_action_request(q, "shelve"))


@rule(2, after=1)
def _save_shelving(q: Query):
    """nova-api's first SQL UPDATE of instances below step 1."""
    return q.found(q.first("Nova.api", sql("UPDATE", "instances"), under=q.step(1)))


@rule(3, after=1)
def _create_image(q: Query):
    """glance-api's SERVER span for POST /v2/images called by nova-api below step 1."""
    return q.found(q.request("Nova.api", "Glance.api", server=http_server("POST", r"/images$"),
                             under=q.step(1)))


@rule(4, after=1)
def _cast_shelve(q: Query):
    """nova-api's PRODUCER span of the rpc cast shelve_instance below step 1."""
    return q.found(q.first("Nova.api", send("cast", method="shelve_instance"),
                           under=q.step(1)))


@rule(6)
def _compute_takes_shelve(q: Query):
    """nova-compute's CONSUMER process span of step 4's message."""
    return q.found(next(iter(q.consumers_of(q.step(4), "Nova-compute")), None))


@rule(7, after=6)
def _power_off(q: Query):
    """nova-compute's libvirt CLIENT span shutdown (or destroy) inside
    ComputeManager._power_off_instance below step 6: the first, the shelve's own (the
    offload's comes later). A guest already off makes neither; then the power off's first
    libvirt call, as a fallback."""
    calls = [s for s in q.spans("Nova-compute", _LIBVIRT, under=q.step(6))
             if _under_function(q, s, "ComputeManager._power_off_instance")]
    off = next((s for s in calls if s.get(attr.RPC_METHOD) in ("shutdown", "destroy")), None)
    if off is not None:
        return q.found(off)
    return q.found(q.fallback(calls[0] if calls else None,
                              "no shutdown or destroy (the guest was already off); the "
                              "power off's first libvirt call stands in"))


@rule(8, after=6)
def _upload(q: Query):
    """glance-api's SERVER span for PUT /v2/images/<id>/file called by nova-compute below
    step 6."""
    return q.found(q.request("Nova-compute", "Glance.api",
                             server=http_server("PUT", r"/images/[^/]+/file$"),
                             under=q.step(6)))


@rule(9, after=8)
def _store(q: Query):
    """A Ceph SERVER span (ceph-rgw's PUT, or an OSD's write for an rbd store) called by
    glance-api below step 8."""
    write = any_of(http_server("PUT"), lambda s: s.kind == "SERVER" and
                   str(s.get(attr.RPC_METHOD) or s.name).rsplit("/", 1)[-1].startswith("write"))
    return q.found(q.request("Glance.api", "Ceph", server=write, under=q.step(8)))


@rule(10, after=6)
def _save_shelved(q: Query):
    """nova-conductor's first span below step 6 recording nova.instance.vm_state = shelved."""
    return q.found(_saved(q, "shelved", q.step(6)))


def _offload(q: Query) -> Span | None:
    """nova-compute's ComputeManager._shelve_offload_instance: below step 6 (offloaded at
    once), else the one of a later shelveOffload request."""
    offload = function("ComputeManager._shelve_offload_instance")
    if q.step(6) is not None:
        found = q.first("Nova-compute", offload, under=q.step(6))
        if found is not None:
            return found
    return q.first("Nova-compute", offload)


@rule(11)
def _unbind_ports(q: Query):
    """neutron-server's SERVER span for PUT /v2.0/ports/<id> called by nova-compute below
    ComputeManager._shelve_offload_instance."""
    offload = _offload(q)
    return q.found(offload and q.request("Nova-compute", "Neutron-server",
                                         server=http_server("PUT", r"/ports/[^/]+$"),
                                         under=offload))


@rule(12)
def _destroy(q: Query):
    """nova-compute's first libvirt CLIENT span destroy, undefineFlags or undefine below
    ComputeManager._shelve_offload_instance."""
    gone = ("destroy", "undefineFlags", "undefine")
    offload = _offload(q)
    return q.found(offload and q.first("Nova-compute", lambda s: _LIBVIRT(s) and
                                       s.get(attr.RPC_METHOD) in gone, under=offload))


@rule(13)
def _save_offloaded(q: Query):
    """nova-conductor's first span below ComputeManager._shelve_offload_instance recording
    nova.instance.vm_state = shelved_offloaded."""
    return q.found(_saved(q, "shelved_offloaded", _offload(q)))


@rule(14)
def _unshelve(q: Query):
    """nova-api's SERVER span for POST /v2.1/servers/<id>/action called by the client, below
    which ShelveController._unshelve recorded nova.instance.action = unshelve."""
    return q.found(_action_request(q, "unshelve"))


@rule(15, after=14)
def _save_unshelving(q: Query):
    """nova-api's first SQL UPDATE of instances below step 14."""
    return q.found(q.first("Nova.api", sql("UPDATE", "instances"), under=q.step(14)))


@rule(16, after=14)
def _cast_unshelve(q: Query):
    """nova-api's PRODUCER span of the rpc cast unshelve_instance below step 14."""
    return q.found(q.first("Nova.api", send("cast", method="unshelve_instance"),
                           under=q.step(14)))


@rule(18)
def _conductor_takes_unshelve(q: Query):
    """nova-conductor's CONSUMER process span of step 16's message."""
    return q.found(next(iter(q.consumers_of(q.step(16), "Nova-conductor")), None))


@rule(19, after=18)
def _conductor_reads_image(q: Query):
    """glance-api's SERVER span for GET /v2/images/<id> called by nova-conductor below
    step 18."""
    return q.found(q.request("Nova-conductor", "Glance.api",
                             server=http_server("GET", r"/images/[^/]+$"), under=q.step(18)))


@rule(20, after=18)
def _call_scheduler(q: Query):
    """nova-conductor's PRODUCER span of the rpc call select_destinations below step 18."""
    return q.found(q.first("Nova-conductor", send("call", method="select_destinations"),
                           under=q.step(18)))


@rule(21)
def _scheduler_takes_call(q: Query):
    """nova-scheduler's CONSUMER process span of step 20's message."""
    return q.found(next(iter(q.consumers_of(q.step(20), "Nova.scheduler")), None))


@rule(22, after=21)
def _read_hosts(q: Query):
    """nova-scheduler's first SQL SELECT from compute_nodes below step 21."""
    return q.found(q.first("Nova.scheduler", sql("SELECT", "compute_nodes"),
                           under=q.step(21)))


@rule(23, after=21)
def _scheduler_replies(q: Query):
    """nova-scheduler's PRODUCER span of the reply below step 21."""
    return q.found(q.first("Nova.scheduler", send("reply"), under=q.step(21)))


@rule(24)
def _conductor_takes_reply(q: Query):
    """nova-conductor's CONSUMER receive span of step 23's reply; the moment is its end,
    when the answer arrived."""
    return q.found(next(iter(q.consumers_of(q.step(23), "Nova-conductor",
                                            consume("receive"))), None), edge="end")


@rule(25, after=18)
def _cast_to_host(q: Query):
    """nova-conductor's PRODUCER span of the rpc cast unshelve_instance to a compute.* topic
    below step 18."""
    return q.found(q.first("Nova-conductor", send("cast", method="unshelve_instance",
                                                  to="compute"), under=q.step(18)))


@rule(26)
def _compute_takes_unshelve(q: Query):
    """nova-compute's CONSUMER process span of step 25's message."""
    return q.found(next(iter(q.consumers_of(q.step(25), "Nova-compute")), None))


@rule(27, after=26)
def _bind_ports(q: Query):
    """neutron-server's first SERVER span for PUT /v2.0/ports/<id> called by nova-compute
    below step 26."""
    return q.found(q.request("Nova-compute", "Neutron-server",
                             server=http_server("PUT", r"/ports/[^/]+$"), under=q.step(26)))


@rule(28, after=26)
def _get_image(q: Query):
    """glance-api's first SERVER span for GET /v2/images/<id> called by nova-compute below
    step 26."""
    return q.found(q.request("Nova-compute", "Glance.api",
                             server=http_server("GET", r"/images/[^/]+$"), under=q.step(26)))


@rule(29, after=26)
def _download(q: Query):
    """A Ceph SERVER span called by nova-compute below step 26 that reads the image: the
    gateway's GET of the object, or an OSD read outside libvirt (not the guest's disk);
    else glance-api's GET /v2/images/<id>/file called by nova-compute (drawn so)."""
    read = any_of(http_server("GET"), lambda s: s.kind == "SERVER" and
                  str(s.get(attr.RPC_METHOD) or s.name).rsplit("/", 1)[-1] == "read")
    span = q.request("Nova-compute", "Ceph", server=lambda s: read(s) and not
                     q.under_libvirt(s), under=q.step(26))
    if span is not None:
        return q.found(span)
    span = q.request("Nova-compute", "Glance.api",
                     server=http_server("GET", r"/images/[^/]+/file$"), under=q.step(26))
    return q.found(span, drawn=("Nova-compute", "Glance.api"),
                   note="the image's data came through glance-api")


@rule(30, after=26)
def _start_guest(q: Query):
    """nova-compute's libvirt CLIENT span createWithFlags (or create) below step 26."""
    return q.found(q.first("Nova-compute", lambda s: _LIBVIRT(s) and
                           s.get(attr.RPC_METHOD) in ("createWithFlags", "create"),
                           under=q.step(26)))


@rule(31, after=26)
def _delete_image(q: Query):
    """glance-api's SERVER span for DELETE /v2/images/<id> called by nova-compute below
    step 26."""
    return q.found(q.request("Nova-compute", "Glance.api",
                             server=http_server("DELETE", r"/images/[^/]+$"),
                             under=q.step(26)))


@rule(32, after=26)
def _save_active(q: Query):
    """nova-conductor's first span below step 26 recording nova.instance.vm_state = active."""
    return q.found(_saved(q, "active", q.step(26)))


_DRAWN = {number: ("Nova-compute", "Nova-conductor") for number in (10, 13, 32)}


def _steps() -> tuple[Step, ...]:
    steps = []
    for number, source, target, text, kind, returns in _TABLE:
        func = RULES.get(number)
        steps.append(Step(number, source, target, f"{source} -> {target}", text, kind, returns,
                          drawn=_DRAWN.get(number),
                          notes=(NOTES[number],) if number in NOTES else (),
                          rule_doc=" ".join((func.__doc__ or "").split()) if func else
                          f"the end of step {returns}'s span"))
    return tuple(steps)


# -- which steps a session implies ----------------------------------------------------------

def _cast_below_action(trace: Trace, action: str, method: str) -> bool:
    """Did nova-api (for a shelve) or the conductor (for an unshelve) send ``method``
    while serving a request recorded as ``action``?"""
    actions = [s for s in trace if s.get(attr.NOVA_INSTANCE_ACTION) == action
               and s.service == "nova-api"]
    return any(s.kind == "PRODUCER" and s.get(attr.RPC_METHOD) == method
               for a in actions for s in trace.descendants(a))


def _volume_backed(trace: Trace) -> str | None:
    """A volume-backed server has no local disk to snapshot: nova-api casts
    shelve_offload_instance at once, and unshelve boots from the volume."""
    if _cast_below_action(trace, "shelve", "shelve_offload_instance"):
        return ("the server is volume-backed: nova-api cast shelve_offload_instance at once, "
                "no snapshot image is made, fetched or deleted")
    return None


def _not_offloaded(trace: Trace) -> str | None:
    """A SHELVED server (shelved_offload_time -1, never offloaded) starts again on its own
    host: the conductor casts start_instance, nothing is scheduled or spawned."""
    if _cast_below_action(trace, "unshelve", "start_instance"):
        return ("the server was SHELVED, not offloaded: the conductor cast start_instance to "
                "its host; no offload, no scheduling, no spawn")
    return None


CONDITIONS = (
    Condition("volume-backed", (3, 8, 9, 19, 28, 29, 31), _volume_backed),
    Condition("not offloaded", (11, 12, 13, *range(19, 33)), _not_offloaded),
)


def recognise(trace: Trace | Iterable[Span]) -> str | None:
    """How a trace shows the shelve flow ran: nova-compute shelved, offloaded or unshelved
    in it (``ComputeManager.shelve_instance``, ``shelve_offload_instance`` or
    ``unshelve_instance``); the evidence as a sentence, or None."""
    wanted = [function(f"ComputeManager.{name}") for name in
              ("shelve_instance", "shelve_offload_instance", "unshelve_instance")]
    for span in trace:
        if span.service == "nova-compute" and any(w(span) for w in wanted):
            return f"span {span.name!r} of nova-compute ({span.span_id})"
    return None


# -- the session: one server's shelve and unshelve requests as one trace --------------------

SESSION_ROOT = "server shelve session (joined)"
SESSION_SERVICE = "openstack-client (joined)"
SESSION_SCOPE = "novalab.diagrams.flows.shelve"
ACTIONS = ("shelve", "shelveOffload", "unshelve")


def _actions_of(spans: Iterable[Span], server_id: str) -> list[tuple[int, str]]:
    """(start, action) of each shelve-family server action of ``server_id`` in ``spans``:
    the first nova-api span recording it (the controller; the action record says it too)."""
    first: dict[str, int] = {}
    for span in spans:
        action = span.get(attr.NOVA_INSTANCE_ACTION)
        if span.service == "nova-api" and action in ACTIONS and \
                span.get(attr.NOVA_INSTANCE_UUID) == server_id:
            first[action] = min(first.get(action, span.start_ns), span.start_ns)
    return sorted((start, action) for action, start in first.items())


def cycles(traces: dict[str, list[Span]], server_id: str) -> list[list[str]]:
    """The trace ids of each shelve cycle of ``server_id``, oldest first: a shelve request,
    any shelveOffload after it, and the unshelve that ends it (if one came yet)."""
    found = sorted((start, action, trace_id) for trace_id, spans in traces.items()
                   for start, action in _actions_of(spans, server_id))
    result: list[list[str]] = []
    current: list[str] | None = None
    for _start, action, trace_id in found:
        if action == "shelve":
            current = [trace_id]
            result.append(current)
        elif current is not None and trace_id not in current:
            current.append(trace_id)
        if action == "unshelve":
            current = None
    return result


def join(traces: dict[str, list[Span]], trace_ids: list[str], server_id: str) -> list[Span]:
    """The traces ``trace_ids`` as one: a synthetic root linking each request's root, each
    span kept with its ids and times (its trace id moves to ``novalab.original_trace_id``,
    its root is re-parented, marked ``novalab.stitch.parent_inferred``). One trace is
    returned as it is."""
    if len(trace_ids) == 1:
        return list(traces[trace_ids[0]])
    digest = hashlib.sha256(f"novalab-shelve:{server_id}:{':'.join(trace_ids)}".encode())
    new_id, root_id = digest.hexdigest()[:32], digest.hexdigest()[32:48]
    members = [s for tid in trace_ids for s in traces[tid]]
    out, links = [], []
    for span in members:
        attributes = {**span.attributes, attr.NOVALAB_ORIGINAL_TRACE_ID: span.trace_id}
        parent = span.parent_id
        if parent is None:
            parent = root_id
            attributes[attr.NOVALAB_STITCH_PARENT_INFERRED] = True
            role = ", ".join(a for _, a in _actions_of(traces[span.trace_id], server_id))
            links.append(Link(span.trace_id, span.span_id, frozen({
                attr.NOVALAB_STITCH_ROLE: role or "request",
                attr.NOVALAB_STITCH_MATCH: f"a server action of {server_id}"})))
        out.append(dataclasses.replace(span, trace_id=new_id, parent_id=parent,
                                       attributes=frozen(attributes)))
    root = Span(
        trace_id=new_id, span_id=root_id, parent_id=None, name=SESSION_ROOT, kind="INTERNAL",
        service=SESSION_SERVICE, start_ns=min(s.start_ns for s in members),
        end_ns=max(s.end_ns for s in members),
        attributes=frozen({attr.NOVA_INSTANCE_UUID: server_id, attr.NOVALAB_SYNTHETIC: True,
                           attr.NOVALAB_STITCH_TRACES: len(trace_ids)}),
        links=tuple(links),
        resource=frozen({attr.SERVICE_NAME: SESSION_SERVICE, attr.SERVICE_NAMESPACE: "novalab",
                         attr.NOVALAB_SYNTHETIC: True}),
        scope=SESSION_SCOPE)
    return [root, *out]


def session(traces: dict[str, list[Span]], server_id: str,
            containing: str | None = None) -> list[Span] | None:
    """The shelve session of ``server_id`` among ``traces`` (trace id -> spans): the latest
    cycle, or the one holding trace ``containing``; None when the server was never shelved."""
    found = cycles(traces, server_id)
    if containing is not None:
        found = [c for c in found if containing in c]
    return join(traces, found[-1], server_id) if found else None


def select(store, *, server: str | None = None, request_id: str | None = None,
           timeout: float = 10.0, settle: float = 0.5) -> list[Span]:
    """The shelve session a user means, from a ``TraceStore``: of ``server`` (id or name),
    or the one holding the request ``request_id``. Waits (bounded) for spans still
    arriving, as ``TraceStore.select`` does."""
    from novalab.tracing.collect import incomplete
    from novalab.tracing.store import NoTrace

    deadline = time.monotonic() + timeout
    previous = -1
    while True:
        store.refresh()
        rows = store.rows(everything=True)
        spans = None
        try:
            spans = _select_once(store, rows, server, request_id)
        except NoTrace:
            if time.monotonic() > deadline:
                raise
        if spans is not None:
            whole = not incomplete(spans)
            if (whole and len(spans) == previous) or time.monotonic() > deadline:
                return spans
            previous = len(spans)
        time.sleep(settle)


def _select_once(store, rows, server, request_id) -> list[Span]:
    from novalab.tracing.store import NoTrace

    if request_id:
        holding = [r for r in rows if request_id in r.request_ids and r.kind == "request"]
        if not holding:
            raise NoTrace(f"no trace holds request id {request_id}")
        uuids = [u for r in holding for u in r.servers]
    else:
        uuids = [u for r in rows for u, name in r.servers.items() if server in (u, name)]
        if not uuids:
            raise NoTrace(f"no trace names server {server!r}")
    server_id = uuids[0]
    candidates = [r for r in rows if r.kind == "request" and server_id in r.servers
                  and r.operation.startswith("POST") and r.operation.endswith("/action")]
    loaded = store.load_many(candidates)
    spans = session(loaded, server_id, containing=holding[0].id if request_id else None)
    if spans is None:
        raise NoTrace(f"server {server_id} has no shelve request in {store.state_dir}")
    return spans


FLOW = Flow(
    name="shelve",
    title="Shelve, offload and unshelve one server",
    lifelines=LIFELINES,
    steps=_steps(),
    rules=RULES,
    interleave=INTERLEAVE,
    notes=GLOBAL_NOTES,
    source="shared/seeds/002: 'Data flow of openstack request', shelve (2014), and upstream "
           "Nova's compute manager and conductor",
    conditions=CONDITIONS,
    recognise=recognise,
    select=select,
)
