"""Neutron's quotas (``neutron/quota``, the ``quotasv2`` extension): networks, subnets,
ports, security groups and their rules per project (upstream's defaults), counted
from their tables, checked in the API layer before the plugin does any work
(upstream: ``base.Controller._create`` makes a reservation first), and
``/v2.0/quotas/{project_id}`` to read and set them.
"""

from __future__ import annotations

from flask import Flask, g, jsonify
from sqlalchemy import func, select

from novalab.reference.common import policy as common_policy
from novalab.reference.common import validation
from novalab.reference.common.db import Database
from novalab.reference.common.quota import QuotaEngine
from novalab.reference.common.wsgi import json_body
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.db.models import (
    Network,
    Port,
    Quota,
    SecurityGroup,
    SecurityGroupRule,
    Subnet,
)

DEFAULTS = {"network": 100, "subnet": 100, "port": 500, "security_group": 10,
            "security_group_rule": 100}
_TABLES = {"network": Network, "subnet": Subnet, "port": Port,
           "security_group": SecurityGroup, "security_group_rule": SecurityGroupRule}

RULES = {
    "get_quota": common_policy.PROJECT_READER_OR_ADMIN,
    "update_quota": common_policy.ADMIN,
    "delete_quota": common_policy.ADMIN,
}
ENFORCER = common_policy.Enforcer(RULES, error=n_exc.PolicyNotAuthorized)

_LIMIT = {"type": "integer", "minimum": -1, "maximum": 2**31 - 1}
UPDATE = {"type": "object", "properties": {"quota": {
    "type": "object", "properties": {name: _LIMIT for name in DEFAULTS},
    "additionalProperties": False}}, "required": ["quota"], "additionalProperties": False}


def network_quotas(db: Database) -> QuotaEngine:
    def counter(model):
        def count(project_id: str) -> int:
            with db.session() as session:
                return session.scalar(select(func.count()).select_from(model)
                                      .where(model.project_id == project_id))
        return count

    return QuotaEngine(db, Quota, DEFAULTS, {name: counter(model)
                                             for name, model in _TABLES.items()},
                       error=n_exc.OverQuota)


def register(app: Flask, quotas: QuotaEngine) -> None:
    base = "/v2.0/quotas/<project_id>"

    def show(project_id):
        ENFORCER.authorize(g.context, "get_quota", {"project_id": project_id})
        return jsonify({"quota": quotas.limits(project_id)})

    def details(project_id):
        ENFORCER.authorize(g.context, "get_quota", {"project_id": project_id})
        used = quotas.usages(project_id)
        return jsonify({"quota": {name: {"limit": limit, "used": used[name], "reserved": 0}
                                  for name, limit in quotas.limits(project_id).items()}})

    def default(project_id):
        ENFORCER.authorize(g.context, "get_quota", {"project_id": project_id})
        return jsonify({"quota": dict(quotas.defaults)})

    def update(project_id):
        ENFORCER.authorize(g.context, "update_quota", {"project_id": project_id})
        return jsonify({"quota": quotas.set_limits(project_id, json_body()["quota"])})

    def delete(project_id):
        ENFORCER.authorize(g.context, "delete_quota", {"project_id": project_id})
        quotas.delete_limits(project_id)
        return "", 204

    app.add_url_rule(base, "quota_show", show, methods=["GET"])
    app.add_url_rule(f"{base}/details", "quota_details", details, methods=["GET"])
    app.add_url_rule(f"{base}/details.json", "quota_details_json", details, methods=["GET"])
    app.add_url_rule(f"{base}/default", "quota_default", default, methods=["GET"])
    app.add_url_rule(base, "quota_update",
                     validation.schema(UPDATE, error=n_exc.HTTPBadRequest)(update),
                     methods=["PUT"])
    app.add_url_rule(base, "quota_delete", delete, methods=["DELETE"])
