"""oslo.messaging in small: RPC over RabbitMQ or an in-process broker, traced.

``get_transport(url)`` connects to a broker; an :class:`RPCServer` consumes a
:class:`Target`'s queues and runs the endpoint methods; an :class:`RPCClient`
casts (no reply) or calls (waits for the reply) those methods.
"""

from novalab.reference.rpc.client import RPCClient
from novalab.reference.rpc.server import RPCServer
from novalab.reference.rpc.target import Target
from novalab.reference.rpc.transport import get_transport

__all__ = ["RPCClient", "RPCServer", "Target", "get_transport"]
