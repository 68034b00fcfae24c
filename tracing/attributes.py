"""Attribute names used on novalab spans.

Where an OpenTelemetry semantic convention exists we use its name verbatim (the
incubating ``messaging.*``, ``rpc.*``, ``peer.service`` and the stable ``code.*``,
``server.*``, ``db.*``); the few ``nova.*`` and ``novalab.*`` names carry what no
convention covers (instance state, the upstream source a span stands for). Kept
as plain strings in one module so a learner can read the whole vocabulary here.
"""

# Resource
SERVICE_NAME = "service.name"
SERVICE_NAMESPACE = "service.namespace"
SERVICE_INSTANCE_ID = "service.instance.id"
HOST_NAME = "host.name"
PROCESS_PID = "process.pid"

# Code: where the upstream function this span stands for lives.
CODE_FUNCTION_NAME = "code.function.name"
CODE_FILE_PATH = "code.file.path"
UPSTREAM_URL = "novalab.upstream.url"

# Peers that emit no spans of their own.
PEER_SERVICE = "peer.service"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

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

# Nova's instance state machine, recorded where it changes.
NOVA_INSTANCE_UUID = "nova.instance.uuid"
NOVA_VM_STATE = "nova.instance.vm_state"
NOVA_TASK_STATE = "nova.instance.task_state"
NOVA_POWER_STATE = "nova.instance.power_state"
NOVA_HOST = "nova.host"
NOVA_INSTANCE_DISPLAY_NAME = "nova.instance.display_name"  # the user's name for the server
# Nova's instance actions (os-instance-actions): the action a request started.
NOVA_INSTANCE_ACTION = "nova.instance.action"

# OpenStack's request id (oslo.context ``request_id``, the ``X-OpenStack-Request-ID``
# header): on every API's HTTP SERVER span and on the RPC spans that carry its context.
OPENSTACK_REQUEST_ID = "openstack.request_id"
