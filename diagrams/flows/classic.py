"""The classic 58-step "launch an instance" flow, as data, with one rule per step.

The table (``shared/seeds/004_*.txt``) is kept word for word: each ``Step``
has the table's "Request" column (with its spellings, ``Nova.schedular``) and
"Description" column. Lifelines are the table's participants in the order
they first appear; each says which ``service.name`` values belong to it, or,
for infrastructure that emits no spans (the database, the broker, dnsmasq,
libvirt), which CLIENT/PRODUCER spans reach it.

Each rule below finds the span that stands for its step by what the span is,
never by position or step number (spans carry none). Answers (``RETURN``
steps) need no rule: an answer is the end of the span of the step it answers.
Where the table and a real cloud differ, the step's ``notes`` say how, and
``drawn`` names the lifelines really involved: diagrams draw those.
"""

from __future__ import annotations

import re

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
    Found,
    Query,
    any_of,
    client_to,
    consume,
    function,
    http_client,
    http_server,
    send,
    sql,
    sql_statement,
)
from novalab.tracing import attributes as attr

LIFELINES = (
    Lifeline("Client", "actor", ("novalab-client",),
             "the client's spans; a request with no caller in the trace comes from here"),
    Lifeline("Keystone", "service", ("keystone",)),
    Lifeline("Token Store", "infra", (), "keystone's SQL on the keystone_tokens table"),
    Lifeline("Nova.api", "service", ("nova-api",)),
    Lifeline("Database", "infra", (), "SQL CLIENT spans (db.system.name)"),
    Lifeline("RabbitMQ", "infra", (),
             "messaging PRODUCER/CONSUMER spans (messaging.system): the broker"),
    Lifeline("Nova.scheduler", "service", ("nova-scheduler",)),
    Lifeline("Nova-compute", "service", ("nova-compute",)),
    Lifeline("Nova-conductor", "service", ("nova-conductor",)),
    Lifeline("Glance.api", "service", ("glance-api",)),
    Lifeline("Ceph_mon", "service", ("ceph-mon",), "or CLIENT spans with peer.service=ceph-mon"),
    Lifeline("Ceph_rgw", "service", ("ceph-rgw",)),
    Lifeline("Ceph_osd", "service", ("ceph-osd",), "or CLIENT spans with peer.service=ceph-osd"),
    Lifeline("Neutron-server", "service", ("neutron-server",)),
    Lifeline("Neutron-DHCP-agent", "service", ("neutron-dhcp-agent",)),
    Lifeline("Dnsmasq", "infra", (), "CLIENT spans with peer.service=dnsmasq"),
    Lifeline("Neutron-L2-Agent", "service", ("neutron-l2-agent",)),
    Lifeline("Libvirt", "infra", ("qemu-kvm",),
             "CLIENT spans with rpc.system=libvirt (peer.service=libvirt); the hypervisor "
             "it runs has spans of its own (qemu-kvm: QEMU's librbd talking to Ceph)"),
    Lifeline("Cinder.api", "service", ("cinder-api",)),
    Lifeline("VM-instance", "actor", ("cloud-init",), "the guest's own spans (cloud-init)"),
    Lifeline("Neutron_metadata_proxy", "service", ("neutron-metadata-proxy",)),
    Lifeline("Nova-api-metadata", "service", ("nova-api-metadata",)),
)

# The table's spellings of lifeline names, where they differ from the lifeline list.
_ALIASES = {"Nova.schedular": "Nova.scheduler", "Nova-api": "Nova.api"}

# number, request (the table's words), description, kind, answered step.
_TABLE = (
    (1, "Client -> Keystone", "Authentication request", SYNC, None),
    (2, "Keystone -> Token Store", "Save token", SYNC, None),
    (3, "Keystone -> Client", "Pass authentication token", RETURN, 1),
    (4, "Client -> Nova.api", "Start instance", SYNC, None),
    (5, "Nova.api -> Database", "Create initial entry for instance", SYNC, None),
    (6, "Nova.api -> RabbitMQ", "Make rpc.cast to request the new instance", ASYNC, None),
    (7, "Nova.api -> Client", "Instance request complete", RETURN, 4),
    (8, "Nova.schedular -> RabbitMQ", "Subscribe new instance request", ASYNC, None),
    (9, "Nova.schedular -> Database", "Read filtering and weighing information", SYNC, None),
    (10, "Nova.schedular -> Database", "Read cluster state", SYNC, None),
    (11, "Nova.schedular -> Database", "Save instance state", SYNC, None),
    (12, "Nova.schedular -> RabbitMQ", "Rpc.cast to launch instance", ASYNC, None),
    (13, "Nova-compute -> RabbitMQ", "Subscribe new instance request", ASYNC, None),
    (14, "Nova-compute -> RabbitMQ",
     "Rpc.call to Nova-conductor to fetch the instance information", SYNC, None),
    (15, "Nova-conductor -> RabbitMQ", "Subscribe new instance request", ASYNC, None),
    (16, "Nova-conductor -> RabbitMQ", "Read instance state", SYNC, None),
    (17, "Nova-conductor -> RabbitMQ", "Publish new instance state", ASYNC, None),
    (18, "Nova-compute -> RabbitMQ", "Subscribe new instance request", ASYNC, None),
    (19, "Nova-compute -> Glance.api", "[REST] get Image URI by Image ID from glance", SYNC, None),
    (20, "Glance.api -> Nova-compute", "Return image URI", RETURN, 19),
    (21, "Nova-compute -> Ceph_mon", "Retrieve cluster map", SYNC, None),
    (22, "Ceph_mon -> Nova-compute", "Return cluster map", RETURN, 21),
    (23, "Nova-compute -> Ceph_rgw", "[REST] request for object", SYNC, None),
    (24, "Ceph_rgw -> Ceph_osd", "[Socket] get object", SYNC, None),
    (25, "Ceph_rgw -> Nova-compute", "Return object", RETURN, 23),
    (26, "Nova-compute -> Neutron-server", "Allocate and configure the network for the instance",
     SYNC, None),
    (27, "Neutron-server -> RabbitMQ", "Request IP address", ASYNC, None),
    (28, "Neutron-server -> RabbitMQ", "Request L2 configuration", ASYNC, None),
    (29, "Neutron-DHCP-agent -> RabbitMQ", "Read request IP address", ASYNC, None),
    (30, "Neutron-DHCP-agent -> Dnsmasq", "Allocate IP address", SYNC, None),
    (31, "Dnsmasq -> Neutron-DHCP-agent", "Reply", RETURN, 30),
    (32, "Neutron-DHCP-agent -> RabbitMQ", "Reply IP address", SYNC, None),
    (33, "Neutron-server -> RabbitMQ", "Read IP address", ASYNC, None),
    (34, "Neutron-L2-Agent -> RabbitMQ", "Read request for L2 configuration", ASYNC, None),
    (35, "Neutron-L2-Agent -> Libvirt", "Configure L2", SYNC, None),
    (36, "Neutron-L2-Agent -> RabbitMQ", "Reply to L2 configuration", SYNC, None),
    (37, "Neutron-server -> Database", "Save instance network state", SYNC, None),
    (38, "Neutron-server -> Nova-compute", "Pass network information", SYNC, None),
    (39, "Nova-compute -> Cinder.api", "[REST] get volume data", SYNC, None),
    (40, "Cinder.api -> Keystone", "Validate token and permissions", SYNC, None),
    (41, "Keystone -> Cinder.api", "Update authentication headers with roles and acl",
     RETURN, 40),
    (42, "Cinder.api -> Nova-compute", "Return volume information", RETURN, 39),
    (43, "Nova-compute -> Libvirt", "Start VM", SYNC, None),
    (44, "Nova-compute -> Libvirt", "Update port information", SYNC, None),
    (45, "Nova-compute -> RabbitMQ",
     "Rpc.call to Nova-conductor to fetch the instance information", SYNC, None),
    (46, "Nova-conductor -> RabbitMQ", "Subscribe new instance request", ASYNC, None),
    (47, "Nova-conductor -> RabbitMQ", "Publish new instance state", ASYNC, None),
    (48, "Nova-compute -> Libvirt", "Pass volume information", SYNC, None),
    (49, "Libvirt -> Ceph_mon", "Get cluster map", SYNC, None),
    (50, "Ceph_mon -> Libvirt", "Return cluster map", RETURN, 49),
    (51, "Libvirt -> Ceph_osd", "Mount volume", SYNC, None),
    (52, "VM-instance -> Neutron_metadata_proxy", "http rest 169.254.169.254", SYNC, None),
    (53, "Neutron_metadata_proxy -> Nova-api-metadata", "http rest add uuid into X-headers",
     SYNC, None),
    (54, "Neutron_metadata_proxy -> VM-instance", "Return metadata", RETURN, 52),
    (55, "Client -> Nova-api", "Poll instance state", SYNC, None),
    (56, "Nova.api -> Database", "Read instance state", SYNC, None),
    (57, "Database -> Nova.api", "Return state", RETURN, 56),
    (58, "Nova-api -> Client", "Return instance state", RETURN, 55),
)

# What the trace really shows, where the table draws something else.
_DRAWN = {
    16: ("Nova-conductor", "Database"),
    38: ("Neutron-server", "Nova.api"),
}

NOTES = {
    2: "Keystone has issued Fernet tokens, which are never stored, since Ocata; novalab keeps "
       "the older stored-token design (a SHA-256 of each token in keystone_tokens) so that "
       "this step exists.",
    5: "The classic flow: nova-api inserts the instance row (API._provision_instances) in the "
       "one nova database before it casts. Since Ocata nova-api writes a BuildRequest, a "
       "RequestSpec and an InstanceMapping to the API database instead, and the conductor "
       "creates the instance in its cell once a host is chosen "
       "(schedule_and_build_instances).",
    6: "Grizzly's topology: nova-api casts run_instance to the scheduler. Havana and Icehouse "
       "sent the boot through nova-conductor (build_instances), which still cast run_instance "
       "to the scheduler; since Juno the conductor calls the scheduler's select_destinations "
       "and casts build_and_run_instance to the host itself.",
    8: "nova-api answers 202 (step 7) as soon as the cast is published, so the scheduler may "
       "take the message (step 8) before or after the client has its answer.",
    9: "Filters and weighers come from configuration (the enabled filter and weigher "
       "classes), not from database rows. The database read that feeds them is the services "
       "table (is each nova-compute up and enabled?) and the per-host usage of instances.",
    11: "The scheduler saves only the chosen host and node on the instance (Grizzly's "
        "instance_update_db).",
    12: "The table's hybrid, which no release ran: Grizzly's scheduler cast run_instance to "
        "the host (ComputeAPI.run_instance); build_and_run_instance came in Havana and was "
        "first sent in Juno, by the conductor (ComputeTaskManager.build_instances), once it "
        "called select_destinations. novalab's classic scheduler casts today's method so "
        "that one compute manager serves both topologies.",
    13: "The compute host consumes from its own topic, compute.<host>.",
    14: "nova-compute never opens the database: every read and save of the instance is an "
        "rpc.call to nova-conductor (since Grizzly). 14 is the first such call of the build, "
        "45 the last.",
    16: "The table draws this read as an arrow to RabbitMQ; the conductor reads the instance "
        "from the database (drawn as Nova-conductor -> Database).",
    17: "The answer is published on the caller's reply queue (reply_<id>) with the call's "
        "correlation id; it is not a new request.",
    18: "What nova-compute takes off the broker here is the conductor's reply on its reply "
        "queue, not a new instance request.",
    19: "Real Nova fetches the image in spawn(), after _build_resources has set up networks "
        "and block devices, so steps 19-25 may come after steps 26-42.",
    26: "The port's IP address is allocated here, by neutron-server's IPAM while it creates "
        "the port (IpamPluggableBackend.allocate_ips_for_port_and_store, a row in "
        "neutron_ipallocations); the later steps the table calls requesting, allocating and "
        "replying an IP address only carry that address to the DHCP agent. nova-compute then "
        "binds the port to its host (PUT), which is what sends the L2 agent to work (step 28).",
    27: "No IP address is requested: IPAM chose it in step 26. This is port_create_end, a "
        "cast on dhcp_agent.<host> telling the DHCP agent that the port exists, with its MAC "
        "and its address.",
    29: "What the DHCP agent takes is step 27's notification of the new port, its address "
        "already chosen.",
    30: "dnsmasq allocates nothing: the agent writes the port's MAC and IP (chosen by IPAM in "
        "step 26) into dnsmasq's hosts file and has it reload (Dnsmasq.reload_allocations); "
        "dnsmasq later hands exactly that address to the guest when it asks over DHCP.",
    32: "No IP address goes back: the agent calls dhcp_ready_on_ports on q-plugin (an "
        "rpc.call with the port ids) to say dnsmasq now serves the port.",
    33: "neutron-server takes dhcp_ready_on_ports and lifts the port's DHCP provisioning "
        "block; it reads no IP address. Once the L2 agent lifts its block too (step 36), the "
        "port goes ACTIVE (step 37) and Nova is told (step 38).",
    35: "The Linux bridge agent puts the port's tap on its network's bridge (brq<network>); "
        "novalab's bridges are libvirt networks, so the step is the networkUpdate that "
        "records the tap on it (LinuxBridgeManager.plug_interface).",
    23: "The table fetches the image over the RADOS gateway's Swift API; the object itself is "
        "read from an OSD (step 24).",
    38: "Neutron tells Nova through nova-api (POST os-server-external-events, e.g. "
        "network-vif-plugged), which casts external_instance_event to the compute host; the "
        "table draws neutron talking to nova-compute directly (drawn as Neutron-server -> "
        "Nova.api).",
    40: "keystonemiddleware caches validated tokens; when cinder-api has the token cached, no "
        "validation request is made and this step is honestly missing.",
    39: "nova-compute first creates the data volume (POST) and then reads it (GET); the "
        "first of its requests to cinder-api is drawn.",
    44: "No Nova call is named 'update port' on libvirt: Nova plugs the instance's ports "
        "(os-vif, LibvirtDriver.plug_vifs) just before it starts the guest; novalab's "
        "bridges are libvirt networks, so that plug is a libvirt call.",
    48: "Nova passes volumes to libvirt as disks of the domain XML (defineXML) before the "
        "guest starts, so steps 48-51 may come before steps 43-47.",
    49: "libvirt itself emits no spans and does not talk to Ceph: the hypervisor it starts "
        "(QEMU's librbd) does, as the domain starts. Its spans are the qemu-kvm service's, "
        "drawn on the Libvirt lifeline; on libvirt's test hypervisor they come from novalab's "
        "stand-in for QEMU (novalab.stand_in).",
    55: "The client polls GET /servers/{id}; the step is its last poll, the one that saw the "
        "final state.",
}

INTERLEAVE = (
    Interleave((8, 9, 10, 11, 12), (7,),
               "the 202 goes back while the scheduler already works on the cast"),
    Interleave(tuple(range(26, 43)), tuple(range(19, 26)),
               "real Nova sets up networks and volumes (_build_resources) before spawn() "
               "fetches the image"),
    Interleave((44,), (43,),
               "Nova plugs the ports (os-vif) before it starts the guest"),
    Interleave((48, 49, 50, 51), (43, 44, 45, 46, 47),
               "real Nova attaches volumes before it starts the VM and saves the instance"),
    Interleave((52, 53, 54), (45, 46, 47),
               "the guest asks for its metadata on its own time; nova-compute does not wait "
               "for it before saving the instance"),
)

GLOBAL_NOTES = (
    "The table's RabbitMQ lifeline stands for whatever broker carried the messages; "
    "messaging.system names it (rabbitmq, or novalab.memory for the embedded cloud's "
    "in-memory broker).",
)


# -- rules, one per step that is not an answer ---------------------------------------------

RULES = {}


def rule(number):
    def register(func):
        RULES[number] = func
        return func
    return register


_AUTH = http_server("POST", r"/v3/auth/tokens$")
_VALIDATE = http_server("GET", r"/v3/auth/tokens$")
_CREATE_SERVER = http_server("POST", r"/servers$")
_SHOW_SERVER = http_server("GET", r"/servers/(?!detail$)[^/]+$")


@rule(1)
def _authenticate(q: Query):
    """keystone's SERVER span for POST /v3/auth/tokens called by the client (the first)."""
    return q.found(q.request("Client", "Keystone", server=_AUTH))


@rule(2)
def _save_token(q: Query):
    """keystone's SQL INSERT into keystone_tokens below step 1."""
    return q.found(q.first("Keystone", sql("INSERT", "keystone_tokens"), under=q.step(1)))


@rule(4)
def _create_server(q: Query):
    """nova-api's SERVER span for POST /v2.1/servers called by the client."""
    return q.found(q.request("Client", "Nova.api", server=_CREATE_SERVER))


@rule(5)
def _insert_instance(q: Query):
    """nova-api's first SQL INSERT into instances below step 4."""
    return q.found(q.first("Nova.api", sql("INSERT", "instances"), under=q.step(4)))


@rule(6)
def _cast_to_scheduler(q: Query):
    """nova-api's first PRODUCER span of an rpc cast below step 4."""
    return q.found(q.first("Nova.api", send("cast"), under=q.step(4)))


@rule(8)
def _scheduler_takes_request(q: Query):
    """nova-scheduler's CONSUMER process span of step 6's message (link, parent or message id);
    without step 6, its first process span of a cast."""
    return q.found(q.consumer(q.step(6), "Nova.scheduler", consume("process", style="cast")))


def _scheduler_reads(q: Query):
    return [s for s in q.spans("Nova.scheduler", sql("SELECT"), under=q.step(8))]


@rule(9)
def _read_filter_inputs(q: Query):
    """nova-scheduler's first SQL SELECT below step 8 that is not the compute_nodes read."""
    reads = [s for s in _scheduler_reads(q) if sql_statement(s)[1] != "compute_nodes"]
    return q.found(reads[0] if reads else None)


@rule(10)
def _read_cluster_state(q: Query):
    """nova-scheduler's first SQL SELECT from compute_nodes below step 8."""
    reads = [s for s in _scheduler_reads(q) if sql_statement(s)[1] == "compute_nodes"]
    return q.found(reads[0] if reads else None)


@rule(11)
def _save_host(q: Query):
    """nova-scheduler's first SQL UPDATE of instances below step 8."""
    return q.found(q.first("Nova.scheduler", sql("UPDATE", "instances"), under=q.step(8)))


@rule(12)
def _cast_to_compute(q: Query):
    """nova-scheduler's first PRODUCER span of an rpc cast below step 8."""
    return q.found(q.first("Nova.scheduler", send("cast"), under=q.step(8)))


@rule(13)
def _compute_takes_request(q: Query):
    """nova-compute's CONSUMER process span of step 12's message; without step 12, its first
    process span of a cast to a compute.* topic."""
    return q.found(q.consumer(q.step(12), "Nova-compute",
                             consume("process", style="cast", source="compute")))


def _below_build(q: Query, pred) -> list:
    """nova-compute's spans matching ``pred`` below step 13 (the build); without any there,
    anywhere in the trace (each then a fallback)."""
    found = q.spans("Nova-compute", pred, under=q.step(13)) if q.step(13) else []
    if found:
        return found
    return [q.fallback(s, "not found below step 13 (the build); taken from anywhere in the "
                          "trace") for s in q.spans("Nova-compute", pred)]


def _conductor_calls(q: Query):
    return _below_build(q, send("call", service="conductor"))


@rule(14)
def _first_conductor_call(q: Query):
    """nova-compute's first PRODUCER span of an rpc call to the conductor (below step 13)."""
    calls = _conductor_calls(q)
    return q.found(calls[0] if calls else None)


@rule(15)
def _conductor_takes_call(q: Query):
    """nova-conductor's CONSUMER process span of step 14's message."""
    return q.found(next(iter(q.consumers_of(q.step(14), "Nova-conductor")), None))


@rule(16)
def _conductor_reads_instance(q: Query):
    """nova-conductor's first SQL SELECT from instances below step 15."""
    return q.found(q.first("Nova-conductor", sql("SELECT", "instances"), under=q.step(15)),
                  drawn=_DRAWN[16])


@rule(17)
def _conductor_replies(q: Query):
    """nova-conductor's PRODUCER span of the reply, below step 15."""
    return q.found(q.first("Nova-conductor", send("reply"), under=q.step(15)))


@rule(18)
def _compute_takes_reply(q: Query):
    """nova-compute's CONSUMER receive span of step 17's reply (linked to it); the moment is
    the end of that span, when the reply arrived (the span starts when the wait begins)."""
    return q.found(next(iter(q.consumers_of(q.step(17), "Nova-compute")), None), edge="end")


@rule(19)
def _get_image(q: Query):
    """glance-api's SERVER span for GET /v2/images/<id> called by nova-compute (below step 13
    when there is one)."""
    image = http_server("GET", r"/v2/images/[^/]+$")
    return q.found(q.below_step(13, lambda under: q.request("Nova-compute", "Glance.api",
                                                            server=image, under=under)))


def _any_server(span) -> bool:
    """Any SERVER span: for Ceph's daemons the service and the caller decide."""
    return span.kind == "SERVER"


_MON_CLIENT = client_to("ceph-mon", rpc_system="ceph", rpc_service="mon")
_OSD_CLIENT = client_to("ceph-osd", rpc_system="ceph", rpc_service="osd")


@rule(21)
def _get_cluster_map(q: Query):
    """ceph-mon's SERVER span called by nova-compute, else nova-compute's CLIENT span to the
    mon (peer.service=ceph-mon or rpc.system=ceph, rpc.service=mon), not below libvirt."""
    return q.found(q.request("Nova-compute", "Ceph_mon",
                            server=lambda s: _any_server(s) and not q.under_libvirt(s),
                            client=lambda s: _MON_CLIENT(s) and not q.under_libvirt(s)))


@rule(23)
def _get_object(q: Query):
    """ceph-rgw's SERVER span for GET /swift/v1/... below the build (step 13), called by
    nova-compute (or by glance-api on its behalf, drawn so)."""
    swift = http_server("GET", r"^/swift/v1/")
    span = q.request("Nova-compute", "Ceph_rgw", server=swift, under=q.step(13))
    if span is not None:
        return q.found(span)
    span = q.request("Glance.api", "Ceph_rgw", server=swift, under=q.step(13))
    return q.found(span, drawn=("Glance.api", "Ceph_rgw"),
                  note="the image bytes came through glance-api, which read them from the "
                       "gateway")


@rule(24)
def _read_from_osd(q: Query):
    """ceph-osd's SERVER span called by ceph-rgw, below step 23; without one (ceph-osd left
    no span), ceph-rgw's CLIENT span to an OSD, as a fallback."""
    return q.found(q.below_step(23, lambda under: q.request(
        "Ceph_rgw", "Ceph_osd", server=_any_server, client=_OSD_CLIENT, under=under)))


@rule(26)
def _allocate_network(q: Query):
    """neutron-server's first SERVER span for POST or PUT on /v2.0/ports called by
    nova-compute."""
    ports = any_of(http_server("POST", r"/ports$"), http_server("PUT", r"/ports/[^/]+$"))
    return q.found(q.below_step(13, lambda under: q.request("Nova-compute", "Neutron-server",
                                                            server=ports, under=under)))


@rule(27)
def _request_ip(q: Query):
    """neutron-server's PRODUCER cast of port_create_end (topic dhcp_agent), the first."""
    cast = any_of(send("cast", method="port_create_end"), send("cast", to="dhcp_agent"))
    return q.found(q.first_under([q.step(26)], "Neutron-server", cast))


@rule(28)
def _request_l2(q: Query):
    """neutron-server's PRODUCER cast of port_update (topic q-agent-notifier-port-update)."""
    cast = any_of(send("cast", method="port_update"),
                  send("cast", to="q-agent-notifier-port-update"))
    return q.found(q.first("Neutron-server", cast))


@rule(29)
def _dhcp_takes_request(q: Query):
    """neutron-dhcp-agent's CONSUMER process span of step 27's message."""
    return q.found(q.consumer(q.step(27), "Neutron-DHCP-agent",
                             consume("process", method="port_create_end")))


@rule(30)
def _dnsmasq(q: Query):
    """neutron-dhcp-agent's CLIENT span to dnsmasq (peer.service=dnsmasq), below step 29."""
    return q.found(q.first_under([q.step(29)], "Neutron-DHCP-agent", client_to("dnsmasq")))


@rule(32)
def _dhcp_ready(q: Query):
    """neutron-dhcp-agent's PRODUCER span of the dhcp_ready_on_ports call."""
    return q.found(q.first_under([q.step(29)], "Neutron-DHCP-agent",
                                send(method="dhcp_ready_on_ports")))


@rule(33)
def _server_takes_dhcp_ready(q: Query):
    """neutron-server's CONSUMER process span of step 32's message."""
    return q.found(q.consumer(q.step(32), "Neutron-server",
                             consume("process", method="dhcp_ready_on_ports")))


@rule(34)
def _l2_takes_request(q: Query):
    """neutron-l2-agent's CONSUMER process span of step 28's message."""
    return q.found(q.consumer(q.step(28), "Neutron-L2-Agent",
                             consume("process", method="port_update")))


_LIBVIRT = client_to("libvirt", rpc_system="libvirt")
_PLUG_INTERFACE = function("LinuxBridgeManager.plug_interface")


def _in(q: Query, span, pred) -> bool:
    """Is one of ``span``'s ancestors in its own service a ``pred`` span?"""
    return any(pred(a) for a in q.trace.ancestors(span) if a.service == span.service)


@rule(35)
def _configure_l2(q: Query):
    """neutron-l2-agent's libvirt CLIENT span networkUpdate inside
    LinuxBridgeManager.plug_interface, below step 34: the port's tap put on its network's
    bridge. Without it (the tap was already there), the plug's first libvirt call, as a
    fallback. Never the connection's libvirt.open nor a call of the wait for the tap."""
    def plug(under):
        calls = [s for s in q.spans("Neutron-L2-Agent", _LIBVIRT, under=under)
                 if _in(q, s, _PLUG_INTERFACE)]
        update = next((s for s in calls if s.get(attr.RPC_METHOD) == "networkUpdate"), None)
        if update is not None:
            return update
        return q.fallback(calls[0] if calls else None,
                          "the plug made no networkUpdate (the tap was already on the "
                          "bridge); its first libvirt call stands in")
    return q.found(q.below_step(34, plug))


@rule(36)
def _device_up(q: Query):
    """neutron-l2-agent's PRODUCER span of the update_device_up call."""
    return q.found(q.first_under([q.step(34)], "Neutron-L2-Agent",
                                send(method="update_device_up")))


_SETS_STATUS = re.compile(r"\bSET\b.*\bstatus\s*=", re.IGNORECASE | re.DOTALL)


def _port_status_saved(span) -> bool:
    """An UPDATE of neutron_ports that sets the port's status (the port going ACTIVE),
    not another write of the same table (a failed binding, a revision bump)."""
    return sql("UPDATE", "neutron_ports")(span) and \
        _SETS_STATUS.search(span.get(attr.DB_QUERY_TEXT) or "") is not None


@rule(37)
def _save_port_state(q: Query):
    """neutron-server's first SQL UPDATE or INSERT while processing step 36's message;
    without it, its last UPDATE setting a port's status in neutron_ports, as a fallback."""
    write = any_of(sql("UPDATE"), sql("INSERT"))
    for consumer in q.consumers_of(q.step(36), "Neutron-server"):
        span = q.first("Neutron-server", write, under=consumer)
        if span is not None:
            return q.found(span)
    return q.found(q.fallback(q.last("Neutron-server", _port_status_saved),
                              "no write while neutron-server took step 36's message; its "
                              "last UPDATE of a port's status stands in"))


@rule(38)
def _network_info_to_nova(q: Query):
    """nova-api's SERVER span for POST os-server-external-events called by neutron-server."""
    events = http_server("POST", r"/os-server-external-events$")
    return q.found(q.request("Neutron-server", "Nova.api", server=events), drawn=_DRAWN[38])


@rule(39)
def _get_volume(q: Query):
    """cinder-api's first SERVER span for GET or POST .../volumes... called by nova-compute."""
    volume = any_of(http_server("GET", r"/volumes"), http_server("POST", r"/volumes$"))
    return q.found(q.below_step(13, lambda under: q.request("Nova-compute", "Cinder.api",
                                                            server=volume, under=under)))


@rule(40)
def _validate_token(q: Query):
    """keystone's SERVER span for GET /v3/auth/tokens called by cinder-api (below step 39
    when there is one)."""
    return q.found(q.below_step(39, lambda under: q.request("Cinder.api", "Keystone",
                                                            server=_VALIDATE, under=under)))


def _libvirt_calls(q: Query, methods=()):
    wanted = set(methods)
    return [s for s in _below_build(q, _LIBVIRT) if not wanted or s.get(attr.RPC_METHOD) in wanted]


@rule(43)
def _start_vm(q: Query):
    """nova-compute's libvirt CLIENT span createWithFlags (or create), the first."""
    calls = _libvirt_calls(q, ("createWithFlags", "create"))
    return q.found(calls[0] if calls else None)


# Whole words of an identifier: ``LibvirtDriver.plug_vifs`` is "libvirt driver plug vifs",
# ``attachInterface`` is "attach interface"; "report", "import" and "support" hold no "port".
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_VIF = re.compile(r"\b(?:vifs?|interfaces?|ports?)\b")
_VOLUME = re.compile(r"\b(?:volumes?|block devices?)\b")


def _words(name: str) -> str:
    return " ".join(word.lower() for word in _WORD.findall(name))


def _under_name(q: Query, span, pattern) -> bool:
    """Is an ancestor of ``span`` in its own service named with ``pattern``'s words?"""
    return any(pattern.search(_words(a.name)) for a in q.trace.ancestors(span)
               if a.service == span.service)


@rule(44)
def _update_port(q: Query):
    """nova-compute's libvirt CLIENT span updateDeviceFlags, or a libvirt call below a span
    named for VIFs, interfaces or ports, as whole words (LibvirtDriver.plug_vifs makes one
    today; _report_state or import_image do not count)."""
    calls = [s for s in _libvirt_calls(q)
             if s.get(attr.RPC_METHOD) == "updateDeviceFlags" or _under_name(q, s, _VIF)]
    return q.found(calls[0] if calls else None)


@rule(45)
def _last_conductor_call(q: Query):
    """nova-compute's last PRODUCER span of an rpc call to the conductor (not step 14's)."""
    calls = _conductor_calls(q)
    return q.found(calls[-1] if len(calls) > 1 else None)


@rule(46)
def _conductor_takes_last_call(q: Query):
    """nova-conductor's CONSUMER process span of step 45's message."""
    return q.found(next(iter(q.consumers_of(q.step(45), "Nova-conductor")), None))


@rule(47)
def _conductor_replies_last(q: Query):
    """nova-conductor's PRODUCER span of the reply, below step 46."""
    return q.found(q.first("Nova-conductor", send("reply"), under=q.step(46)))


def _defines_volumes(q: Query, span) -> bool:
    """A defineXML whose domain has volumes (``nova.volume.ids`` on a caller span)."""
    return span.get(attr.RPC_METHOD) == "defineXML" and any(
        a.get(attr.NOVA_VOLUME_IDS) for a in q.trace.ancestors(span) if a.service == span.service)


@rule(48)
def _pass_volume(q: Query):
    """nova-compute's libvirt defineXML of a guest with volumes (they reach libvirt as disks
    of the domain XML), else a libvirt call attaching a device below a volume span, or
    attachDeviceFlags not below a VIF span."""
    calls = [s for s in _libvirt_calls(q)
             if _defines_volumes(q, s) or _under_name(q, s, _VOLUME) or
             (str(s.get(attr.RPC_METHOD, "")).startswith("attachDevice")
              and not _under_name(q, s, _VIF))]
    return q.found(calls[0] if calls else None)


def _hypervisor_to_ceph(q: Query, lifeline: str, client) -> Found | None:
    """The daemon's SERVER span called by the hypervisor (qemu-kvm, on the Libvirt
    lifeline), else the hypervisor's CLIENT span to it; else, in a trace where another
    service made the call below a libvirt call (before QEMU had a service of its own)."""
    span = q.request("Libvirt", lifeline, server=_any_server, client=client)
    if span is not None:
        return q.found(span)
    spans = [s for s in q.spans(lifeline, _any_server) if q.under_libvirt(s)] or \
        [s for s in q.spans(None, client) if q.under_libvirt(s)]
    return q.found(q.fallback(spans[0] if spans else None,
                              "no span of the hypervisor (qemu-kvm) made this call; one below "
                              "a libvirt call, made by another service, stands in"))


@rule(49)
def _libvirt_cluster_map(q: Query):
    """ceph-mon's SERVER span called by the hypervisor (qemu-kvm: QEMU's librbd, started by
    libvirt); without it, the hypervisor's CLIENT span to ceph-mon, or a ceph-mon span below
    a libvirt call, as fallbacks."""
    return _hypervisor_to_ceph(q, "Ceph_mon", _MON_CLIENT)


@rule(51)
def _mount_volume(q: Query):
    """ceph-osd's SERVER span called by the hypervisor (qemu-kvm opening the volume's RBD
    image); without it, the hypervisor's CLIENT span to ceph-osd, or a ceph-osd span below a
    libvirt call, as fallbacks."""
    return _hypervisor_to_ceph(q, "Ceph_osd", _OSD_CLIENT)


@rule(52)
def _guest_asks_metadata(q: Query):
    """neutron-metadata-proxy's SERVER span called by the guest (cloud-init), else the guest's
    CLIENT span to 169.254.169.254."""
    return q.found(q.request("VM-instance", "Neutron_metadata_proxy", server=http_server(),
                            client=http_client(r"//169\.254\.169\.254[:/]")))


@rule(53)
def _proxy_forwards(q: Query):
    """nova-api-metadata's SERVER span called by neutron-metadata-proxy (below step 52)."""
    return q.found(q.below_step(52, lambda under: q.request(
        "Neutron_metadata_proxy", "Nova-api-metadata", server=http_server(), under=under)))


@rule(55)
def _poll(q: Query):
    """nova-api's SERVER span for the client's last GET /v2.1/servers/<id>."""
    return q.found(q.request("Client", "Nova.api", server=_SHOW_SERVER, last=True))


@rule(56)
def _read_state(q: Query):
    """nova-api's first SQL SELECT from instances below step 55."""
    return q.found(q.first("Nova.api", sql("SELECT", "instances"), under=q.step(55)))


def _steps():
    steps = []
    for number, request, text, kind, returns in _TABLE:
        source, target = (_ALIASES.get(p.strip(), p.strip()) for p in request.split("->"))
        func = RULES.get(number)
        steps.append(Step(number, source, target, request, text, kind, returns,
                          drawn=_DRAWN.get(number), notes=(NOTES[number],) if number in NOTES
                          else (), rule_doc=" ".join((func.__doc__ or "").split()) if func else
                          f"the end of step {returns}'s span"))
    return tuple(steps)


# -- which steps a boot implies -------------------------------------------------------------

def _recorded(trace, key) -> list:
    return [s.get(key) for s in trace if s.get(key) is not None]


def _image_not_fetched(trace) -> str | None:
    """Steps 19-25 fetch the image; a boot from a volume or a cached image fetches nothing."""
    if any(v is True for v in _recorded(trace, attr.NOVA_BUILD_BOOT_FROM_VOLUME)):
        return ("the server boots from a volume: Cinder copied the image into it, so "
                "nova-compute fetches no image")
    hits = [s for s in trace if s.get(attr.NOVA_IMAGE_CACHE_HIT) is not None]
    if hits and all(s.get(attr.NOVA_IMAGE_CACHE_HIT) is True for s in hits):
        hosts = ", ".join(sorted({str(s.host) for s in hits}))
        return (f"the image was already in the cache of {hosts} (_base, from an earlier "
                "boot), so nova-compute asked neither Glance nor Ceph for it")
    return None


def _no_network(trace) -> str | None:
    """Steps 26-38, 44 and the metadata path 52-54 need a port on a Neutron network."""
    counts = _recorded(trace, attr.NOVA_BUILD_NETWORKS)
    if counts and max(counts) == 0:
        return ("the boot asked for no network (or the cloud runs without Neutron): no port, "
                "no DHCP, no metadata proxy")
    return None


def _no_volume(trace) -> str | None:
    """Steps 39-42 and 48-51 exist for the instance's volumes."""
    counts = _recorded(trace, attr.NOVA_BUILD_VOLUMES)
    if counts and max(counts) == 0:
        return "the boot mapped no volume: nothing for Cinder, no rbd disk for libvirt"
    return None


CONDITIONS = (
    Condition("image download", tuple(range(19, 26)), _image_not_fetched),
    Condition("network", (*range(26, 39), 44, 52, 53, 54), _no_network),
    Condition("volumes", (39, 40, 41, 42, 48, 49, 50, 51), _no_volume),
)


FLOW = Flow(
    name="classic",
    title="Request flow when launching an instance (classic, 58 steps)",
    lifelines=LIFELINES,
    steps=_steps(),
    rules=RULES,
    interleave=INTERLEAVE,
    notes=GLOBAL_NOTES,
    source="shared/seeds/004: 'Request flow when launching an Instance' (2017)",
    conditions=CONDITIONS,
)
