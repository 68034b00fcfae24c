"""Provisioning blocks: a port goes ACTIVE only when every entity wiring it is done.

When neutron-server hands a port to its agents it records one *block* per entity
that still has work to do: ``DHCP`` (the DHCP agent must put the port in
dnsmasq's hosts file) and ``L2`` (the L2 agent must plug it on the host). Each
agent reports back over RPC (``dhcp_ready_on_ports``, ``update_device_up``) and
the server calls :meth:`provisioning_complete`; when the last block of a port is
gone, the callbacks registered for ``PROVISIONING_COMPLETE`` run (ML2's
``_port_provisioned``, which sets the port ACTIVE and so tells Nova).

Upstream (``neutron/db/provisioning_blocks.py``) deletes the block and checks for
others in one transaction and relies on the database's isolation; two agents
finishing at the same moment can then both see the other's block. neutron-server
here is one process, so a lock serialises completions: whichever finishes last
sees no block left and fires the callbacks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from opentelemetry import trace
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from novalab.reference.common.db import Database
from novalab.reference.neutron.db.models import ProvisioningBlock
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

DHCP_ENTITY = "DHCP"
L2_AGENT_ENTITY = "L2"
PROVISIONING_COMPLETE = "provisioning_complete"

Callback = Callable[[str, str], None]  # (port_id, entity that completed last)


class ProvisioningBlocks:
    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer
        self._callbacks: list[Callback] = []
        self._lock = threading.Lock()

    def subscribe(self, callback: Callback) -> None:
        """Run ``callback(port_id, entity)`` when a port's last block is removed."""
        self._callbacks.append(callback)

    @upstream("neutron/db/provisioning_blocks.py", "add_provisioning_component")
    def add_provisioning_component(self, session: Session, object_id: str, entity: str) -> None:
        """Block ``object_id`` until ``entity`` reports; part of the caller's transaction."""
        trace.get_current_span().set_attributes({attr.NEUTRON_PORT_ID: object_id,
                                                 attr.NEUTRON_PROVISIONING_ENTITY: entity})
        exists = session.get(ProvisioningBlock, (object_id, entity))
        if exists is None:  # a leftover block from an earlier update is fine
            session.add(ProvisioningBlock(object_id=object_id, entity=entity))

    def remove_provisioning_component(self, session: Session, object_id: str,
                                      entity: str | None = None) -> bool:
        """Drop a block that no longer applies, without firing callbacks."""
        query = delete(ProvisioningBlock).where(ProvisioningBlock.object_id == object_id)
        if entity is not None:
            query = query.where(ProvisioningBlock.entity == entity)
        return bool(session.execute(query).rowcount)

    def is_object_blocked(self, object_id: str) -> bool:
        with self.db.session() as session:
            return self._blocks(session, object_id) != []

    def blocks(self, object_id: str) -> list[str]:
        with self.db.session() as session:
            return self._blocks(session, object_id)

    @staticmethod
    def _blocks(session: Session, object_id: str) -> list[str]:
        return sorted(session.scalars(select(ProvisioningBlock.entity).where(
            ProvisioningBlock.object_id == object_id)))

    @upstream("neutron/db/provisioning_blocks.py", "provisioning_complete")
    def provisioning_complete(self, object_id: str, entity: str) -> None:
        """``entity`` is done with ``object_id``; fire the callbacks if nothing is left."""
        span = trace.get_current_span()
        span.set_attributes({attr.NEUTRON_PORT_ID: object_id,
                             attr.NEUTRON_PROVISIONING_ENTITY: entity})
        with self._lock:
            with self.db.session() as session:
                self.remove_provisioning_component(session, object_id, entity)
            with self.db.session() as session:
                remaining = self._blocks(session, object_id)
        if remaining:
            LOG.debug("Port %s still blocked by %s", object_id, remaining)
            span.set_attribute(attr.NEUTRON_PROVISIONING_REMAINING, remaining)
            return
        for callback in self._callbacks:
            callback(object_id, entity)
