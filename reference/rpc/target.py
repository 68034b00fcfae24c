"""Where an RPC message goes: ``Target`` names an exchange, a topic and maybe a server.

As in ``oslo_messaging.Target``, a client sends to a target and a server listens
on one. The topic names a service (``conductor``, ``compute``); the server names
one host running it. A message for ``topic`` goes to whichever server takes it
first, one for ``topic.server`` only to that host: this is how nova-conductor
reaches "any scheduler" but "the compute service on host1".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    topic: str
    server: str | None = None
    exchange: str = "nova"

    @property
    def routing_key(self) -> str:
        """The AMQP routing key, also the name of the queue that key lands in."""
        return f"{self.topic}.{self.server}" if self.server else self.topic
