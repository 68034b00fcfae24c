"""The shelve actions (``nova/api/openstack/compute/shelve.py``): shelve, shelveOffload, unshelve.

Each finds the server (another project's is a 404), checks its policy against
the server's project, asks ``compute_api`` and answers ``202`` with no body: the
work happens on the compute host. A server in a state the action does not take
is a 409 naming the state, as Nova words it.

    POST /v2.1/servers/{id}/action  {"shelve": null}          members of the project
    POST /v2.1/servers/{id}/action  {"shelveOffload": null}   admins only
    POST /v2.1/servers/{id}/action  {"unshelve": null}        members of the project
"""

from __future__ import annotations

from flask import g
from opentelemetry import trace

from novalab.reference.common import exception
from novalab.reference.nova import policy
from novalab.reference.nova.api.actions import (
    action,
    raise_http_conflict_for_instance_invalid_state,
)
from novalab.reference.nova.api.schemas import shelve as schema
from novalab.reference.nova.compute import instance_actions
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

_SHELVE = "nova/api/openstack/compute/shelve.py"
POLICY_ROOT = "os_compute_api:os-shelve:%s"


class ShelveController:
    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _act(self, server_id: str, rule: str, action_name: str, recorded: str, call) -> tuple:
        context = g.context
        instance = self.compute_api.get(context, server_id)
        policy.authorize(context, POLICY_ROOT % rule,
                         {"project_id": instance["project_id"], "user_id": instance["user_id"]})
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_INSTANCE_UUID, instance["uuid"])
        span.set_attribute(attr.NOVA_INSTANCE_ACTION, recorded)
        try:
            call(context, instance)
        except exception.InstanceInvalidState as exc:
            raise_http_conflict_for_instance_invalid_state(exc, action_name, server_id)
        return "", 202

    @action("shelve", schema.shelve)
    @upstream(_SHELVE, "ShelveController._shelve")
    def _shelve(self, server_id: str, body: dict):
        return self._act(server_id, "shelve", "shelve", instance_actions.SHELVE,
                         self.compute_api.shelve)

    @action("shelveOffload", schema.shelve_offload)
    @upstream(_SHELVE, "ShelveController._shelve_offload")
    def _shelve_offload(self, server_id: str, body: dict):
        return self._act(server_id, "shelve_offload", "shelveOffload",
                         instance_actions.SHELVE_OFFLOAD, self.compute_api.shelve_offload)

    @action("unshelve", schema.unshelve)
    @upstream(_SHELVE, "ShelveController._unshelve")
    def _unshelve(self, server_id: str, body: dict):
        return self._act(server_id, "unshelve", "unshelve", instance_actions.UNSHELVE,
                         self.compute_api.unshelve)
