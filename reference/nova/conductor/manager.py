"""The conductor (``nova/conductor/manager.py``): database work on behalf of compute hosts.

Each public method is an RPC endpoint. The conductor holds the database
credentials; compute hosts send it what to read or save and wait for the reply.
"""

from __future__ import annotations

from opentelemetry import trace

from novalab.reference.common.db import Database
from novalab.reference.nova.db import api as db_api
from novalab.tracing.spans import set_instance_attributes, upstream

_MANAGER = "nova/conductor/manager.py"


class ConductorManager:
    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    @upstream(_MANAGER, "ConductorManager.instance_get_by_uuid", ref="grizzly-eol")
    def instance_get_by_uuid(self, context, instance_uuid: str) -> dict:
        instance = db_api.instance_get_by_uuid(self.db, instance_uuid)
        set_instance_attributes(trace.get_current_span(), instance)
        return instance

    @upstream(_MANAGER, "ConductorManager.instance_update", ref="grizzly-eol")
    def instance_update(self, context, instance_uuid: str, updates: dict, **kwargs) -> dict:
        """Apply ``updates``; ``expected_task_state`` (if sent) guards against races."""
        new = db_api.instance_update(self.db, instance_uuid, updates, **kwargs)
        set_instance_attributes(trace.get_current_span(), new)
        return new

    @upstream(_MANAGER, "ConductorManager.instance_destroy", ref="grizzly-eol")
    def instance_destroy(self, context, instance_uuid: str) -> dict:
        return db_api.instance_destroy(self.db, instance_uuid)

    @upstream(_MANAGER, "ConductorManager.block_device_mapping_get_all_by_instance",
              ref="grizzly-eol")
    def block_device_mapping_get_all_by_instance(self, context, instance_uuid: str) -> list:
        return db_api.block_device_mapping_get_all_by_instance(self.db, instance_uuid)

    @upstream(_MANAGER, "ConductorManager.block_device_mapping_update_or_create",
              ref="grizzly-eol")
    def block_device_mapping_update(self, context, bdm_id: int, values: dict) -> dict:
        """Save ``values`` on one mapping. Grizzly's conductor had no endpoint of this
        name: it got ``block_device_mapping_update_or_create`` with ``create=False``."""
        return db_api.block_device_mapping_update(self.db, bdm_id, values)

    @upstream(_MANAGER, "ConductorManager.instance_info_cache_update", ref="grizzly-eol")
    def instance_info_cache_update(self, context, instance_uuid: str,
                                   network_info: list) -> dict:
        return db_api.instance_info_cache_update(self.db, instance_uuid, network_info)

    def instance_fault_create(self, context, values: dict) -> dict:
        return db_api.instance_fault_create(self.db, values)

    @upstream(_MANAGER, "ConductorManager.action_event_start", ref="grizzly-eol")
    def action_event_start(self, context, values: dict) -> dict:
        """A compute host starts an event of an instance action (``EventReporter``)."""
        return db_api.action_event_start(self.db, values)

    @upstream(_MANAGER, "ConductorManager.action_event_finish", ref="grizzly-eol")
    def action_event_finish(self, context, values: dict) -> dict:
        """... and finishes it with its result."""
        return db_api.action_event_finish(self.db, values)

    def instance_get_all_by_host(self, context, host: str) -> list[dict]:
        return db_api.instance_get_all(self.db, host=host)

    def compute_node_update(self, context, values: dict) -> dict:
        return db_api.compute_node_create_or_update(self.db, values)

    def service_get_or_create(self, context, host: str, binary: str, topic: str) -> dict:
        return db_api.service_create_or_get(self.db, host, binary, topic)

    def service_report(self, context, service_id: int) -> dict:
        return db_api.service_report(self.db, service_id)
