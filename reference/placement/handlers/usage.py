"""Usages (``placement/handlers/usage.py``): what is allocated, per resource class.

``GET /resource_providers/{uuid}/usages`` sums a provider's allocations for
every class it has inventory of; ``GET /usages?project_id=[&user_id=]`` (1.9)
sums a project's (or user's) allocations everywhere, the one placement read a
project's own reader may make.
"""

from __future__ import annotations

from flask import g, request

from novalab.reference.placement import policy, schemas
from novalab.reference.placement.handlers import util
from novalab.reference.placement.handlers.resource_provider import get_provider_or_404
from novalab.reference.placement.objects.allocation import Allocations
from novalab.reference.placement.objects.resource_provider import ResourceProviders
from novalab.tracing.spans import upstream

PATH = "placement/handlers/usage.py"


class UsageHandler:
    def __init__(self, providers: ResourceProviders, allocations: Allocations, tracer):
        self.providers = providers
        self.allocations = allocations
        self.tracer = tracer

    @upstream(PATH, "list_usages")
    def list_usages(self, uuid: str):
        policy.authorize(g.context, "placement:resource_providers:usages")
        provider = get_provider_or_404(
            self.providers, uuid, f"No resource provider with uuid {uuid} found")
        return util.send({"resource_provider_generation": provider.generation,
                          "usages": self.providers.get_usages(provider)})

    @upstream(PATH, "get_total_usages")
    def get_total_usages(self):
        project_id = request.args.get("project_id")
        policy.authorize(g.context, "placement:usages", {"project_id": project_id})
        params = util.validate_query_params({(1, 9): schemas.GET_USAGES})
        return util.send({"usages": self.allocations.get_usages_by_project_user(
            params["project_id"], params.get("user_id"))})
