"""Today's boot (Nova since Pike): the super conductor, placement and cells, as data.

Written from two walkthroughs of today's ``POST /servers`` (``shared/seeds/000_*``,
"Walkthrough of a typical Nova boot request", Pike; ``001_*``, "OpenStack Nova -
deep-dive into the provisioning process"), in their words where they have words
for a step: nova-api writes a request spec, a build request and an instance
mapping to the *API database* and casts ``schedule_and_build_instances`` to the
*super conductor*; the conductor *calls* the scheduler's ``select_destinations``,
which asks *placement* for allocation candidates and claims one; the conductor
then finds the host's cell, creates the instance in the *cell database*, deletes
the build request and casts ``build_and_run_instance`` to the host, which builds
networks and storage and spawns the guest (``Guest.create`` defines it,
``launch`` starts it).

The lifelines are the two walkthroughs' participants. The API and the cell
database are two lifelines, told apart by table (``API_TABLES``): both may be
one database server, and in novalab's embedded cloud one SQLite file, but the
tables are the two databases' and a query touches one of them.

The super conductor (the scheduling and the cell choice, service
``nova-super-conductor``) and cell1's conductor (nova-compute's instance
saves, ``nova-conductor``) are two processes on two virtual hosts of the
broker, as DevStack runs them by default (``CELLSV2_SETUP=superconductor``).

The flow recognises its trace by the conductor's
``ComputeTaskManager.schedule_and_build_instances`` span (``RECOGNISE``): only
today's chain makes it. Rules follow ``rules.py``: each finds its span by what
it is; answers are the ends of the spans they answer. Placement's steps take
placement-api's own SERVER spans and nothing else: a claim is proven only by
placement having answered it.
"""

from __future__ import annotations

from novalab.diagrams.flows.classic import _image_not_fetched, _no_network, _no_volume
from novalab.diagrams.flows.model import (
    ASYNC,
    RETURN,
    SYNC,
    Condition,
    Flow,
    Interleave,
    Lifeline,
    Step,
    span_named,
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
    sql_statement,
)
from novalab.tracing import attributes as attr

# Tables of the API database (nova_api); every other Nova table is a cell's (nova_cell1).
API_TABLES = ("build_requests", "request_specs", "instance_mappings", "host_mappings",
              "cell_mappings", "instance_group_member", "instance_groups", "key_pairs",
              "flavors", "flavor_extra_specs", "flavor_projects", "quotas", "quota_usages",
              "project_user_quotas", "aggregates", "aggregate_hosts", "aggregate_metadata")

LIFELINES = (
    Lifeline("Client", "actor", ("novalab-client",),
             "the client's spans (Alice's openstack CLI); a request with no caller in the "
             "trace comes from here"),
    Lifeline("Nova-api", "service", ("nova-api",)),
    Lifeline("API database", "infra", (),
             "SQL CLIENT spans on the API database's tables (build_requests, request_specs, "
             "instance_mappings, host_mappings, cell_mappings, ...)"),
    Lifeline("RabbitMQ", "infra", (),
             "messaging PRODUCER/CONSUMER spans (messaging.system): the broker"),
    Lifeline("Nova-super-conductor", "service", ("nova-super-conductor",),
             "the super conductor's spans (on the top-level broker, with the API database)"),
    Lifeline("Nova-scheduler", "service", ("nova-scheduler",)),
    Lifeline("Placement", "service", ("placement-api",)),
    Lifeline("Cell database", "infra", (),
             "SQL CLIENT spans on a cell database's tables (instances, block_device_mapping, "
             "instance_actions, compute_nodes, ...)"),
    Lifeline("Nova-conductor", "service", ("nova-conductor",),
             "cell1's conductor: nova-compute's only way to the cell database"),
    Lifeline("Nova-compute", "service", ("nova-compute",)),
    Lifeline("Neutron-server", "service", ("neutron-server",)),
    Lifeline("Cinder-api", "service", ("cinder-api",)),
    Lifeline("Glance-api", "service", ("glance-api",)),
    Lifeline("Libvirt", "infra", ("qemu-kvm",),
             "CLIENT spans with rpc.system=libvirt (peer.service=libvirt)"),
)

# number, request ("A -> B"), description (the walkthroughs' words), kind, answered step.
_TABLE = (
    (1, "Client -> Nova-api", "POST /servers: Alice's boot request", SYNC, None),
    (2, "Nova-api -> API database", "_provision_instances builds a request specification "
     "and stores it", SYNC, None),
    (3, "Nova-api -> API database", "Construct the build request", SYNC, None),
    (4, "Nova-api -> API database", "Map the instance (no cell yet)", SYNC, None),
    (5, "Nova-api -> RabbitMQ", "Send the build request to the super conductor "
     "(schedule_and_build_instances, an async cast)", ASYNC, None),
    (6, "Nova-api -> Client", "HTTP 202: received, not yet done", RETURN, 1),
    (7, "Nova-super-conductor -> RabbitMQ", "The super conductor receives the request",
     ASYNC, None),
    (8, "Nova-super-conductor -> RabbitMQ", "Call scheduler select_destinations() "
     "(an RPC call: the conductor waits)", SYNC, None),
    (9, "Nova-scheduler -> RabbitMQ", "select_destinations takes the call", ASYNC, None),
    (10, "Nova-scheduler -> Placement", "Scheduler asks Placement for possible resource "
     "providers (allocation candidates)", SYNC, None),
    (11, "Placement -> Nova-scheduler", "Allocation candidates", RETURN, 10),
    (12, "Nova-scheduler -> Cell database", "The scheduler driver selects a target host "
     "(host states for the filters and weighers)", SYNC, None),
    (13, "Nova-scheduler -> Placement", "Claim the resources on the selected host "
     "(the allocation, consumer = the instance)", SYNC, None),
    (14, "Placement -> Nova-scheduler", "Allocation written", RETURN, 13),
    (15, "Nova-scheduler -> RabbitMQ", "Reply the selected destination", ASYNC, None),
    (16, "Nova-super-conductor -> RabbitMQ", "Back in the conductor: was scheduling "
     "successful?", ASYNC, None),
    (17, "Nova-super-conductor -> API database", "Determine the cell in which the selected "
     "host is living", SYNC, None),
    (18, "Nova-super-conductor -> Cell database", "Create the instance in that cell",
     SYNC, None),
    (19, "Nova-super-conductor -> API database", "Update the instance mapping with its cell",
     SYNC, None),
    (20, "Nova-super-conductor -> API database", "Delete the build request", SYNC, None),
    (21, "Nova-super-conductor -> RabbitMQ", "Invoke build_and_run_instance of the "
     "compute RPC client (a cast to the selected host)", ASYNC, None),
    (22, "Nova-compute -> RabbitMQ", "build_and_run_instance of the Nova compute manager",
     ASYNC, None),
    (23, "Nova-compute -> RabbitMQ", "_do_build_and_run_instance updates the VM state to "
     "BUILDING (an RPC call to the conductor)", SYNC, None),
    (24, "Nova-conductor -> Cell database", "Save the instance's state", SYNC, None),
    (25, "Nova-compute -> Neutron-server", "_build_resources: networks", SYNC, None),
    (26, "Nova-compute -> Cinder-api", "_build_resources: storage devices", SYNC, None),
    (27, "Nova-compute -> Glance-api", "spawn, _create_image: an image for the VM",
     SYNC, None),
    (28, "Nova-compute -> Libvirt", "_create_domain_and_network: plug in the virtual "
     "network interfaces", SYNC, None),
    (29, "Nova-compute -> Libvirt", "Guest.create(): create the libvirt guest without "
     "starting it", SYNC, None),
    (30, "Nova-compute -> Libvirt", "launch: createWithFlags on the domain", SYNC, None),
    (31, "Nova-compute -> Libvirt", "The timer checks periodically whether the boot is "
     "complete", SYNC, None),
    (32, "Nova-compute -> RabbitMQ", "Update the status of the instance in the database "
     "(an RPC call to the conductor)", SYNC, None),
    (33, "Nova-conductor -> Cell database", "Save the instance's final state",
     SYNC, None),
    (34, "Client -> Nova-api", "Poll the server (GET /servers/{id})", SYNC, None),
    (35, "Nova-api -> API database", "Find the instance's cell (its mapping)", SYNC, None),
    (36, "Nova-api -> Cell database", "Read the instance in its cell", SYNC, None),
    (37, "Nova-api -> Client", "Return the server's state", RETURN, 34),
)

NOTES = {
    1: "ServersController.create validates the body against the API schema, checks policy "
       "(context.can) and calls API.create, which checks quota and the image (a GET to "
       "glance-api, not drawn).",
    2: "Upstream's _provision_instances creates the RequestSpec first, then the "
       "BuildRequest, then the InstanceMapping: all three in the API database.",
    3: "The build request holds the instance object itself, serialized: until a host is "
       "chosen the instance exists in no cell, so GET /servers/{id} answers from the build "
       "request (the instance is BUILD, scheduling).",
    4: "The instance mapping has no cell yet (cell_id NULL); step 19 fills it in.",
    5: "ComputeTaskAPI.schedule_and_build_instances: the cast goes to the conductor topic. "
       "In the classic flow nova-api cast to the scheduler (classic step 6).",
    7: "nova-api answers 202 (step 6) as soon as the cast is published, so the conductor "
       "may take the message before or after the client has its answer.",
    8: "SchedulerQueryClient / SchedulerAPI.select_destinations: an rpc.call on the "
       "scheduler topic. The conductor, not nova-api, calls the scheduler, and it waits.",
    10: "SchedulerReportClient.get_allocation_candidates: GET /allocation_candidates with "
        "the flavor's resources (VCPU, MEMORY_MB, DISK_GB). Placement answers with the "
        "resource providers (compute nodes) that have room, before any filter runs.",
    12: "Filters and weighers run only over the hosts placement offered; their host state "
        "comes from the cell database's compute_nodes.",
    13: "SchedulerReportClient.claim_resources: PUT /allocations/{consumer} with the "
        "instance's uuid as the consumer (the server id), the chosen node as the resource "
        "provider, and the generations placement checks (409 on a conflict). The scheduler "
        "claims; in the classic flow nothing was claimed, the scheduler saved the host on "
        "the instance row (classic step 11).",
    16: "A scheduling failure (NoValidHost) buries the instance in cell0 with its fault "
        "instead of the steps below; there is no cell to build in.",
    17: "HostMapping: which cell the chosen host's compute service belongs to (cell1, in a "
        "one-cell cloud).",
    18: "The instance row is written here, by the conductor, in the cell's database, once "
        "a host is chosen: in the classic flow nova-api wrote it before anything was "
        "scheduled (classic step 5). Its block device mappings and the create action "
        "(instance_actions) are written next to it.",
    19: "The mapping now names the cell: nova-api finds the instance there from now on "
        "(step 35).",
    20: "Without the build request, GET /servers/{id} is answered from the cell.",
    21: "ComputeAPI.build_and_run_instance, cast on compute.<host>. In the classic flow the "
        "scheduler sent it (classic step 12).",
    23: "nova-compute never opens a database: its reads and saves of the instance are RPC "
        "calls to the conductor (here acting as the cell conductor). novalab names them "
        "with Grizzly's conductor RPC (instance_get_by_uuid, instance_update); Havana added "
        "the conductor's object_action, and upstream's compute host has saved with "
        "Instance.save() through it since (all but a few saves by Icehouse). The first "
        "save also records the host and node (the resource tracker's claim, "
        "_set_instance_host_and_node).",
    25: "The ports are created (POST) and bound to the host (PUT) by nova-compute; "
        "Neutron's own steps (DHCP, L2, the vif-plugged event) are as in classic steps "
        "26-38.",
    26: "The data volume: created (POST) and attached through Cinder, as classic steps "
        "39-42.",
    27: "The image record from glance-api; novalab then reads the image bytes from its Ceph "
        "stand-in as classic steps 21-25 draw. Upstream with Ceph clones the image's RBD "
        "image or downloads it through glance.",
    28: "LibvirtDriver.plug_vifs (os-vif); novalab's bridges are libvirt networks, so the "
        "plug is a libvirt call.",
    29: "Guest.create: Host.write_instance_config, i.e. libvirt's defineXML. The domain XML "
        "carries the volumes as disks (classic step 48).",
    30: "Guest.launch: virDomainCreateWithFlags; the guest boots.",
    31: "LibvirtDriver.spawn's _wait_for_boot: a looping call that asks libvirt for the "
        "domain's state (get_info) until it runs.",
    32: "The last instance save of the build: vm_state active, power_state running. As in "
        "step 23, novalab's call is Grizzly's instance_update; upstream's is "
        "Instance.save() through the conductor's object_action.",
    34: "The client polls GET /servers/{id}; the step is its last poll, the one that saw "
        "the final state.",
    35: "nova-api looks the instance mapping up in the API database, then reads the "
        "instance in the cell it names.",
}

INTERLEAVE = (
    Interleave(tuple(range(7, 22)), (6,),
               "the 202 goes back while the conductor already works on the cast"),
)

GLOBAL_NOTES = (
    "The API and the cell database are told apart by table; novalab's embedded cloud keeps "
    "both in one database file, upstream in two databases (nova_api, nova_cell1) and "
    "cell0's (nova_cell0) for instances that never got a host.",
    "The super conductor and cell1's conductor are separate processes on separate virtual "
    "hosts of the broker (DevStack's default CELLSV2_SETUP=superconductor): nova-compute "
    "reaches only its cell's conductor, and only the super conductor reaches the "
    "scheduler.",
    "The table starts at POST /servers: Alice's token request (classic steps 1-3), "
    "Neutron's agents, Ceph and the metadata service work as in the classic table "
    "(novalab flow compare lines the two tables up).",
)

# How a trace of this flow is told from the others: only today's chain makes this span.
RECOGNISE = span_named("ComputeTaskManager.schedule_and_build_instances",
                       "nova-super-conductor")


# -- rules ----------------------------------------------------------------------------------

RULES = {}


def rule(number):
    def register(func):
        RULES[number] = func
        return func
    return register


def database_of(span) -> str | None:
    """The database lifeline a SQL span talks to, by its table (None: not SQL)."""
    statement = sql_statement(span)
    if statement is None:
        return None
    return "API database" if statement[1] in API_TABLES else "Cell database"


_CREATE_SERVER = http_server("POST", r"/servers$")
_SHOW_SERVER = http_server("GET", r"/servers/(?!detail$)[^/]+$")
_CANDIDATES = http_server("GET", r"/allocation_candidates$")
_ALLOCATION = http_server("PUT", r"/allocations/[^/]+$")
_SCHEDULE = function("ComputeTaskManager.schedule_and_build_instances")
_LIBVIRT = client_to("libvirt", rpc_system="libvirt")


def _below(q: Query, lifeline: str, pred, anchor):
    """The first span of ``lifeline`` matching ``pred`` below ``anchor`` (None without one:
    a step is never taken from anywhere in the trace)."""
    return q.first(lifeline, pred, under=anchor) if anchor is not None else None


def _call_below(q: Query, caller: str, callee: str, server, anchor):
    """``callee``'s SERVER span matching ``server``, called by ``caller`` below ``anchor``."""
    return q.request(caller, callee, server=server, under=anchor) if anchor is not None \
        else None


@rule(1)
def _create_server(q: Query):
    """nova-api's SERVER span for POST /v2.1/servers called by the client."""
    return q.found(q.request("Client", "Nova-api", server=_CREATE_SERVER))


def _api_writes(q: Query, operation: str, table: str):
    return q.found(_below(q, "Nova-api", sql(operation, table), q.step(1)))


@rule(2)
def _request_spec(q: Query):
    """nova-api's SQL INSERT into request_specs below step 1 (API._provision_instances)."""
    return _api_writes(q, "INSERT", "request_specs")


@rule(3)
def _build_request(q: Query):
    """nova-api's SQL INSERT into build_requests below step 1."""
    return _api_writes(q, "INSERT", "build_requests")


@rule(4)
def _instance_mapping(q: Query):
    """nova-api's SQL INSERT into instance_mappings below step 1."""
    return _api_writes(q, "INSERT", "instance_mappings")


@rule(5)
def _cast_to_conductor(q: Query):
    """nova-api's PRODUCER span of the schedule_and_build_instances cast, below step 1."""
    return q.found(_below(q, "Nova-api", send("cast", method="schedule_and_build_instances"),
                          q.step(1)))


@rule(7)
def _conductor_takes_request(q: Query):
    """nova-conductor's CONSUMER process span of step 5's message."""
    return q.found(q.consumer(q.step(5), "Nova-super-conductor",
                              consume("process", method="schedule_and_build_instances")))


def _in_schedule(q: Query):
    """The conductor's schedule_and_build_instances span below step 7."""
    return _below(q, "Nova-super-conductor", _SCHEDULE, q.step(7))


@rule(8)
def _call_scheduler(q: Query):
    """nova-conductor's PRODUCER span of the select_destinations rpc call, below step 7."""
    return q.found(_below(q, "Nova-super-conductor", send("call", method="select_destinations"),
                          q.step(7)))


@rule(9)
def _scheduler_takes_call(q: Query):
    """nova-scheduler's CONSUMER process span of step 8's message."""
    return q.found(q.consumer(q.step(8), "Nova-scheduler",
                              consume("process", method="select_destinations")))


@rule(10)
def _candidates(q: Query):
    """placement-api's SERVER span for GET /allocation_candidates called by nova-scheduler
    (below step 9). Placement's own span only: no stand-in."""
    return q.found(_call_below(q, "Nova-scheduler", "Placement", _CANDIDATES, q.step(9)))


_SCHEDULE_DRIVER = function("FilterScheduler._schedule")


@rule(12)
def _host_states(q: Query):
    """nova-scheduler's first SQL SELECT from compute_nodes inside FilterScheduler._schedule,
    below step 9 (the host states the filters and weighers read, not a discovery of new
    hosts)."""
    reads = [s for s in q.spans("Nova-scheduler", sql("SELECT", "compute_nodes"), under=q.step(9))
             if any(_SCHEDULE_DRIVER(a) for a in q.trace.ancestors(s))] if q.step(9) else []
    return q.found(reads[0] if reads else None)


@rule(13)
def _claim(q: Query):
    """placement-api's SERVER span for PUT /allocations/<consumer> called by nova-scheduler
    (below step 9). Placement's own span only: no stand-in."""
    return q.found(_call_below(q, "Nova-scheduler", "Placement", _ALLOCATION, q.step(9)))


@rule(15)
def _scheduler_replies(q: Query):
    """nova-scheduler's PRODUCER span of the reply, below step 9."""
    return q.found(_below(q, "Nova-scheduler", send("reply"), q.step(9)))


@rule(16)
def _conductor_takes_reply(q: Query):
    """nova-conductor's CONSUMER receive span of step 15's reply; the moment is its end,
    when the reply arrived."""
    return q.found(next(iter(q.consumers_of(q.step(15), "Nova-super-conductor")), None),
                   edge="end")


def _conductor_sql(q: Query, operation: str, table: str):
    return q.found(_below(q, "Nova-super-conductor", sql(operation, table), _in_schedule(q)))


@rule(17)
def _host_mapping(q: Query):
    """nova-conductor's SQL SELECT from host_mappings below schedule_and_build_instances."""
    return _conductor_sql(q, "SELECT", "host_mappings")


@rule(18)
def _create_instance(q: Query):
    """nova-conductor's SQL INSERT into instances below schedule_and_build_instances."""
    return _conductor_sql(q, "INSERT", "instances")


@rule(19)
def _update_mapping(q: Query):
    """nova-conductor's SQL UPDATE of instance_mappings below schedule_and_build_instances."""
    return _conductor_sql(q, "UPDATE", "instance_mappings")


@rule(20)
def _delete_build_request(q: Query):
    """nova-conductor's SQL DELETE from build_requests below schedule_and_build_instances."""
    return _conductor_sql(q, "DELETE", "build_requests")


@rule(21)
def _cast_to_compute(q: Query):
    """nova-conductor's PRODUCER span of the build_and_run_instance cast, below
    schedule_and_build_instances."""
    return q.found(_below(q, "Nova-super-conductor", send("cast", method="build_and_run_instance"),
                          _in_schedule(q)))


@rule(22)
def _compute_takes_request(q: Query):
    """nova-compute's CONSUMER process span of step 21's message."""
    return q.found(q.consumer(q.step(21), "Nova-compute",
                              consume("process", method="build_and_run_instance",
                                      source="compute")))


def _below_build(q: Query, pred) -> list:
    """nova-compute's spans matching ``pred`` below step 22, in start order."""
    return q.spans("Nova-compute", pred, under=q.step(22)) if q.step(22) else []


def _saves(q: Query) -> list:
    """nova-compute's rpc calls to the conductor that save the instance, below step 22."""
    return _below_build(q, send("call", method=("instance_update", "object_action"),
                                service="conductor"))


def _conductor_update(q: Query, call) -> object:
    """nova-conductor's UPDATE of instances while it handles ``call``'s message."""
    for consumer in q.consumers_of(call, "Nova-conductor"):
        span = q.first("Nova-conductor", sql("UPDATE", "instances"), under=consumer)
        if span is not None:
            return span
    return None


@rule(23)
def _building(q: Query):
    """nova-compute's first rpc call to the conductor that saves the instance
    (instance_update) below step 22."""
    saves = _saves(q)
    return q.found(saves[0] if saves else None)


@rule(24)
def _save_building(q: Query):
    """nova-conductor's SQL UPDATE of instances while it handles step 23's message."""
    return q.found(_conductor_update(q, q.step(23)))


@rule(25)
def _networks(q: Query):
    """neutron-server's first SERVER span for POST or PUT on /v2.0/ports called by
    nova-compute, below step 22."""
    ports = any_of(http_server("POST", r"/ports$"), http_server("PUT", r"/ports/[^/]+$"))
    return q.found(_call_below(q, "Nova-compute", "Neutron-server", ports, q.step(22)))


@rule(26)
def _storage(q: Query):
    """cinder-api's first SERVER span for POST or GET .../volumes... called by
    nova-compute, below step 22."""
    volume = any_of(http_server("GET", r"/volumes"), http_server("POST", r"/volumes$"))
    return q.found(_call_below(q, "Nova-compute", "Cinder-api", volume, q.step(22)))


@rule(27)
def _image(q: Query):
    """glance-api's SERVER span for GET /v2/images/<id> called by nova-compute below
    step 22 (spawn's _create_image)."""
    image = http_server("GET", r"/v2/images/[^/]+$")
    return q.found(_call_below(q, "Nova-compute", "Glance-api", image, q.step(22)))


def _libvirt_under(q: Query, qualname: str, methods=()) -> list:
    """nova-compute's libvirt CLIENT spans below the build inside ``qualname``."""
    inside = function(qualname)
    wanted = set(methods)
    return [s for s in _below_build(q, _LIBVIRT)
            if any(inside(a) for a in q.trace.ancestors(s) if a.service == s.service)
            and (not wanted or s.get(attr.RPC_METHOD) in wanted)]


@rule(28)
def _plug_vifs(q: Query):
    """nova-compute's first libvirt CLIENT span inside LibvirtDriver.plug_vifs."""
    calls = _libvirt_under(q, "LibvirtDriver.plug_vifs")
    return q.found(calls[0] if calls else None)


@rule(29)
def _define(q: Query):
    """nova-compute's libvirt CLIENT span defineXML inside Guest.create."""
    calls = _libvirt_under(q, "Guest.create", ("defineXML",))
    return q.found(calls[0] if calls else None)


@rule(30)
def _launch(q: Query):
    """nova-compute's libvirt CLIENT span createWithFlags (or create) inside Guest.launch."""
    calls = _libvirt_under(q, "Guest.launch", ("createWithFlags", "create"))
    return q.found(calls[0] if calls else None)


@rule(31)
def _wait_for_boot(q: Query):
    """nova-compute's first libvirt CLIENT span inside spawn's _wait_for_boot (get_info)."""
    calls = _libvirt_under(q, "_wait_for_boot")
    return q.found(calls[0] if calls else None)


@rule(32)
def _final_save(q: Query):
    """nova-compute's last rpc call to the conductor that saves the instance (not step
    23's)."""
    saves = _saves(q)
    return q.found(saves[-1] if len(saves) > 1 else None)


@rule(33)
def _save_final(q: Query):
    """nova-conductor's SQL UPDATE of instances while it handles step 32's message."""
    return q.found(_conductor_update(q, q.step(32)))


@rule(34)
def _poll(q: Query):
    """nova-api's SERVER span for the client's last GET /v2.1/servers/<id>."""
    return q.found(q.request("Client", "Nova-api", server=_SHOW_SERVER, last=True))


@rule(35)
def _find_cell(q: Query):
    """nova-api's first SQL SELECT from instance_mappings below step 34."""
    return q.found(_below(q, "Nova-api", sql("SELECT", "instance_mappings"), q.step(34)))


@rule(36)
def _read_instance(q: Query):
    """nova-api's first SQL SELECT from instances below step 34."""
    return q.found(_below(q, "Nova-api", sql("SELECT", "instances"), q.step(34)))


def _steps():
    steps = []
    for number, request, text, kind, returns in _TABLE:
        source, target = (p.strip() for p in request.split("->"))
        func = RULES.get(number)
        steps.append(Step(number, source, target, request, text, kind, returns,
                          notes=(NOTES[number],) if number in NOTES else (),
                          rule_doc=" ".join((func.__doc__ or "").split()) if func else
                          f"the end of step {returns}'s span"))
    return tuple(steps)


CONDITIONS = (
    Condition("network", (25, 28), _no_network),
    Condition("volumes", (26,), _no_volume),
    Condition("image download", (27,), _image_not_fetched),
)


FLOW = Flow(
    name="modern",
    title="Launching an instance today: super conductor, placement, cells (Pike and later)",
    lifelines=LIFELINES,
    steps=_steps(),
    rules=RULES,
    interleave=INTERLEAVE,
    notes=GLOBAL_NOTES,
    source="shared/seeds/000: 'Walkthrough of a typical Nova boot request' (Pike); "
           "shared/seeds/001: 'OpenStack Nova - deep-dive into the provisioning process'",
    conditions=CONDITIONS,
    recognise=RECOGNISE,
)
