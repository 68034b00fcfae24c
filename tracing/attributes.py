"""Attribute names used on novalab spans.

Where an OpenTelemetry semantic convention exists we use its name verbatim (the
incubating ``messaging.*``, ``rpc.*``, ``peer.service`` and the stable ``code.*``,
``server.*``, ``db.*``); the ``nova.*``, ``neutron.*``, ``cinder.*``, ``ceph.*`` and
``novalab.*`` names carry what no convention covers (instance state, the upstream
source a span stands for). Kept as plain strings in one module so a learner can
read the whole vocabulary here: the services write these constants and the
diagram rules read the same ones (tests/tracing/test_attributes.py checks it).
"""

# Resource
SERVICE_NAME = "service.name"
SERVICE_NAMESPACE = "service.namespace"
SERVICE_INSTANCE_ID = "service.instance.id"
HOST_NAME = "host.name"
HOST_IP = "host.ip"  # the host's addresses (a list), as other hosts reach it
PROCESS_PID = "process.pid"

# Code: where the upstream function this span stands for lives.
CODE_FUNCTION_NAME = "code.function.name"
CODE_FILE_PATH = "code.file.path"
UPSTREAM_URL = "novalab.upstream.url"

# Peers that emit no spans of their own.
PEER_SERVICE = "peer.service"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# The other end of a socket, and how a call failed (general conventions).
NETWORK_PEER_ADDRESS = "network.peer.address"
NETWORK_PEER_PORT = "network.peer.port"
ERROR_TYPE = "error.type"

# HTTP, as the instrumentation packages write them (stable conventions).
HTTP_REQUEST_METHOD = "http.request.method"
HTTP_ROUTE = "http.route"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"
URL_PATH = "url.path"
URL_FULL = "url.full"
USER_AGENT_ORIGINAL = "user_agent.original"
CLIENT_ADDRESS = "client.address"

# Messaging (RPC over AMQP or the in-memory broker).
MESSAGING_SYSTEM = "messaging.system"
MESSAGING_OPERATION_NAME = "messaging.operation.name"
MESSAGING_OPERATION_TYPE = "messaging.operation.type"
MESSAGING_DESTINATION_NAME = "messaging.destination.name"
MESSAGING_ROUTING_KEY = "messaging.rabbitmq.destination.routing_key"
MESSAGING_MESSAGE_ID = "messaging.message.id"
MESSAGING_CONVERSATION_ID = "messaging.message.conversation_id"
MESSAGING_BODY_SIZE = "messaging.message.body.size"
RPC_SYSTEM = "rpc.system"
RPC_SERVICE = "rpc.service"
RPC_METHOD = "rpc.method"
# oslo.messaging's own words: a cast expects no reply, a call waits for one.
NOVALAB_RPC_STYLE = "novalab.rpc.style"

# Database CLIENT spans (stable conventions): the SQLAlchemy instrumentation writes
# system, namespace and text; reference/common/db.py the operation and collection.
DB_SYSTEM_NAME = "db.system.name"
DB_NAMESPACE = "db.namespace"
DB_OPERATION_NAME = "db.operation.name"
DB_COLLECTION_NAME = "db.collection.name"
DB_QUERY_SUMMARY = "db.query.summary"
DB_QUERY_TEXT = "db.query.text"

# Names the instrumentations wrote before the stable conventions: recorded traces
# may still carry them, so the diagrams read them after the stable ones.
DB_SYSTEM = "db.system"
DB_STATEMENT = "db.statement"
HTTP_METHOD = "http.method"
HTTP_TARGET = "http.target"

# Ceph (reference/ceph): no convention covers it, so novalab's own ceph.* names.
CEPH_POOL = "ceph.pool"  # pool name
CEPH_OBJECT = "ceph.object"  # object name (oid)
CEPH_PG = "ceph.pg"  # placement group, "<pool id>.<pg hex>"
CEPH_OSD = "ceph.osd"  # id of the OSD the op is sent to (client) / served by (server)
CEPH_MAP_EPOCH = "ceph.map.epoch"  # cluster map epoch the sender acted on

# Neutron (reference/neutron): the port and network a span works on.
NEUTRON_NETWORK_ID = "neutron.network.id"
NEUTRON_PORT_ID = "neutron.port.id"
NEUTRON_PORT_STATUS = "neutron.port.status"
# Provisioning blocks: which entity (dhcp, l2) cleared its block, how many remain.
NEUTRON_PROVISIONING_ENTITY = "neutron.provisioning.entity"
NEUTRON_PROVISIONING_REMAINING = "neutron.provisioning.remaining"
# The DHCP agent's dnsmasq: real or novalab's stand-in, its pid, hosts it serves.
NOVALAB_DNSMASQ_IMPLEMENTATION = "novalab.dnsmasq.implementation"
NOVALAB_DNSMASQ_PID = "novalab.dnsmasq.pid"
NOVALAB_DNSMASQ_HOSTS = "novalab.dnsmasq.hosts"
# ... and the lines of the hosts file it was given ("mac,name,ip": which MAC gets which
# address), as the agent wrote them for that start or reload.
NOVALAB_DNSMASQ_HOST_ENTRIES = "novalab.dnsmasq.host_entries"
# Security groups: the groups a span works on (a port's, or those whose rules or
# members changed), and the iptables lines the L2 agent's firewall stand-in would
# write for a port (its chains, as ``iptables-save`` prints them).
NEUTRON_SECURITY_GROUP_IDS = "neutron.security_group.ids"
NOVALAB_FIREWALL_RULES = "novalab.firewall.rules"
# How long the L2 agent waited for a device to appear (an event attribute).
NOVALAB_WAITED_S = "novalab.waited_s"

# Cinder (reference/cinder): the volume a span works on.
CINDER_VOLUME_ID = "cinder.volume.id"
CINDER_VOLUME_STATUS = "cinder.volume.status"

# A span made by a novalab stand-in for a part the test hypervisor lacks (QEMU, the
# guest): its value says which part.
NOVALAB_STAND_IN = "novalab.stand_in"

# Read by the diagram rules (step 48): the volumes of the domain being defined,
# written by reference/nova/virt/libvirt/driver.py.
NOVA_VOLUME_IDS = "nova.volume.ids"

# The tags the OpenTelemetry-to-Jaeger mapping adds to a span (diagrams/jaeger.py).
SPAN_KIND = "span.kind"
OTEL_STATUS_CODE = "otel.status_code"
OTEL_STATUS_DESCRIPTION = "otel.status_description"
OTEL_SCOPE_NAME = "otel.scope.name"

# Nova's instance state machine, recorded where it changes.
NOVA_INSTANCE_UUID = "nova.instance.uuid"
# The instances one request builds (the super conductor's schedule_and_build_instances).
NOVA_INSTANCE_UUIDS = "nova.instance.uuids"
NOVA_VM_STATE = "nova.instance.vm_state"
NOVA_TASK_STATE = "nova.instance.task_state"
NOVA_POWER_STATE = "nova.instance.power_state"
# The task state(s) a save required the row to hold (upstream's expected_task_state):
# on the event Instance.save, beside the states it wrote.
NOVA_EXPECTED_TASK_STATE = "nova.instance.expected_task_state"
NOVA_HOST = "nova.host"
NOVA_INSTANCE_DISPLAY_NAME = "nova.instance.display_name"  # the user's name for the server
# Nova's instance actions (os-instance-actions): the action a request started.
NOVA_INSTANCE_ACTION = "nova.instance.action"
# How many instances a create makes, once quota has had its say (min_count..max_count).
NOVA_INSTANCE_COUNT = "nova.instance.count"
# What a build was asked to do, recorded by nova-compute where it starts each part,
# so a flow check knows which steps this boot implies (a boot without a volume
# has no volume steps to miss): networks it got ports on (0: none asked for and
# none to pick, or no Neutron), volumes
# mapped, whether the root disk is a volume, and whether the host already had
# the image in its cache (``_base``) and so fetched nothing.
NOVA_BUILD_NETWORKS = "nova.build.networks"
NOVA_BUILD_VOLUMES = "nova.build.volumes"
NOVA_BUILD_BOOT_FROM_VOLUME = "nova.build.boot_from_volume"
NOVA_IMAGE_CACHE_HIT = "nova.image.cache_hit"

# A key pair (os-keypairs): its name, type and fingerprint, where nova-api creates,
# imports or deletes it, where nova-api-metadata serves it to a guest, and where the
# guest's cloud-init installs it (the same names at both ends, so one query finds both).
NOVA_KEYPAIR_NAME = "nova.keypair.name"
NOVA_KEYPAIR_TYPE = "nova.keypair.type"
NOVA_KEYPAIR_FINGERPRINT = "nova.keypair.fingerprint"

# OpenStack's request id (oslo.context ``request_id``, the ``X-OpenStack-Request-ID``
# header): on every API's HTTP SERVER span and on the RPC spans that carry its context.
OPENSTACK_REQUEST_ID = "openstack.request_id"

# The trace store and the stitcher (novalab.tracing.store, .stitch): provenance of
# what novalab inferred rather than recorded.
NOVALAB_SYNTHETIC = "novalab.synthetic"
NOVALAB_ORIGINAL_TRACE_ID = "novalab.original_trace_id"
NOVALAB_STITCH_ROLE = "novalab.stitch.role"
NOVALAB_STITCH_MATCH = "novalab.stitch.match"
NOVALAB_STITCH_PARENT_INFERRED = "novalab.stitch.parent_inferred"
NOVALAB_STITCH_TRACES = "novalab.stitch.traces"
# On the link from a SERVER span to the context an outside client sent, which the
# service did not join (tracing/propagation.py, TrustedContext).
NOVALAB_LINK_UNTRUSTED_PARENT = "novalab.link.untrusted_parent"
# The traced client of `novalab boot` names what it asked for.
NOVALAB_SERVER_NAME = "novalab.server.name"
NOVALAB_SERVER_STATUS = "novalab.server.status"
NOVALAB_FLAVOR = "novalab.flavor"
NOVALAB_IMAGE = "novalab.image"

# The caller's request id a service keeps beside its own (oslo.context
# ``global_request_id``): an inbound ``X-OpenStack-Request-ID`` of the form
# ``req-<uuid>``, on the SERVER span of the service it reached and on the RPC
# spans whose context carries it.
OPENSTACK_GLOBAL_REQUEST_ID = "openstack.global_request_id"

# nova-compute's wait for external events (nova/compute/instance_events.py): the
# events a build waits for ("network-vif-plugged-<port>"), then each one received.
NOVA_EVENTS = "nova.events"
NOVA_EVENT = "nova.event"
NOVA_EVENT_TAG = "nova.event.tag"
NOVA_EVENT_STATUS = "nova.event.status"

# The filter scheduler (nova/scheduler/filter_scheduler.py): how many hosts it
# considered, and after each filter (a span event) which filter and how many passed.
NOVA_SCHEDULER_HOSTS_CONSIDERED = "nova.scheduler.hosts_considered"
NOVA_SCHEDULER_FILTER = "nova.scheduler.filter"
NOVA_SCHEDULER_HOSTS_PASSED = "nova.scheduler.hosts_passed"
# What [filter_scheduler] in nova.conf put in force for the request (on the span),
# and for a grader, the whole decision: each "filter" event also says how many hosts
# the filter started with, which it passed and rejected (host names), which of the
# request's instances it ran for, and the learner's file it came from (if it did);
# each "weigh" event lists the hosts best first with their weights and free RAM, and
# the host chosen; the span lists the chosen hosts, one per instance.
NOVA_SCHEDULER_ENABLED_FILTERS = "nova.scheduler.enabled_filters"
NOVA_SCHEDULER_WEIGHERS = "nova.scheduler.weighers"
NOVA_SCHEDULER_RAM_WEIGHT_MULTIPLIER = "nova.scheduler.ram_weight_multiplier"
NOVA_SCHEDULER_INSTANCE_INDEX = "nova.scheduler.instance_index"
NOVA_SCHEDULER_HOSTS_BEFORE = "nova.scheduler.hosts_before"
NOVA_SCHEDULER_PASSED_HOSTS = "nova.scheduler.passed_hosts"
NOVA_SCHEDULER_REJECTED_HOSTS = "nova.scheduler.rejected_hosts"
NOVA_SCHEDULER_FILTER_FILE = "nova.scheduler.filter_file"
NOVA_SCHEDULER_WEIGHED_HOSTS = "nova.scheduler.weighed_hosts"
NOVA_SCHEDULER_WEIGHTS = "nova.scheduler.weights"
NOVA_SCHEDULER_FREE_RAM_MB = "nova.scheduler.free_ram_mb"
NOVA_SCHEDULER_CHOSEN_HOST = "nova.scheduler.chosen_host"
NOVA_SCHEDULER_CHOSEN_HOSTS = "nova.scheduler.chosen_hosts"

# An instance-action event (nova/compute/utils.py EventReporter): its name, as
# `openstack server event show` lists it.
NOVA_INSTANCE_ACTION_EVENT = "nova.instance.action.event"
# The fault knobs (reference/common/faults.py): the event a service adds to its
# span when an injected fault strikes there, and its attributes.
NOVALAB_FAULT_EVENT = "novalab.fault"
NOVALAB_FAULT_NAME = "novalab.fault.name"
NOVALAB_FAULT_ONCE = "novalab.fault.once"
