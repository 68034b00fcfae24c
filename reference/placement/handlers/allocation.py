"""Allocations (``placement/handlers/allocation.py``): what a consumer holds, where.

``PUT /allocations/{consumer_uuid}`` replaces a consumer's allocations: a list
of ``{resource_provider: {uuid}, resources}`` before 1.12, then the dict form
``GET`` answers with (``{allocations: {rp_uuid: {resources}}, project_id,
user_id}``), and from 1.28 with the ``consumer_generation`` the caller read
(``null`` for a new consumer; empty allocations then safely remove them).
``POST /allocations`` (1.13) does the same for several consumers in one
transaction: a scheduler moving an instance swaps allocations this way.
``DELETE`` removes them all, with no generation check.
"""

from __future__ import annotations

import uuid as uuidlib

from flask import g

from novalab.reference.placement import errors, exception, microversion, policy, schemas
from novalab.reference.placement.handlers import util
from novalab.reference.placement.handlers.resource_provider import get_provider_or_404
from novalab.reference.placement.objects.allocation import (
    INCOMPLETE_CONSUMER_ID,
    Allocation,
    Allocations,
    ConsumerAllocations,
    ConsumerGenerationConflict,
)
from novalab.reference.placement.objects.resource_provider import ResourceProviders
from novalab.tracing.spans import upstream

PATH = "placement/handlers/allocation.py"


def _serialize_allocations_for_consumer(allocations: list[Allocation]) -> dict:
    by_provider: dict[str, dict] = {}
    for allocation in allocations:
        entry = by_provider.setdefault(allocation.provider.uuid, {"resources": {}})
        entry["resources"][allocation.resource_class] = allocation.used
        entry["generation"] = allocation.provider.generation
    result: dict = {"allocations": by_provider}
    if allocations and microversion.matches(microversion.ALLOCATIONS_DICT):
        consumer = allocations[0].consumer
        result["project_id"] = consumer.project_id
        result["user_id"] = consumer.user_id
        if microversion.matches(microversion.CONSUMER_GENERATION):
            result["consumer_generation"] = consumer.generation
    return result


def _consumer_allocations(consumer_uuid: str, data: dict) -> ConsumerAllocations:
    allocations = data["allocations"]
    if isinstance(allocations, list):   # before 1.12
        allocations = {a["resource_provider"]["uuid"]: {"resources": a["resources"]}
                       for a in allocations}
    return ConsumerAllocations(
        consumer_uuid, data.get("project_id", INCOMPLETE_CONSUMER_ID),
        data.get("user_id", INCOMPLETE_CONSUMER_ID),
        {rp_uuid: dict(entry["resources"]) for rp_uuid, entry in allocations.items()},
        generation=data.get("consumer_generation"),
        check_generation=microversion.matches(microversion.CONSUMER_GENERATION))


class AllocationHandler:
    def __init__(self, providers: ResourceProviders, allocations: Allocations, tracer):
        self.providers = providers
        self.allocations = allocations
        self.tracer = tracer

    @upstream(PATH, "list_for_consumer")
    def list_for_consumer(self, consumer_uuid: str):
        policy.authorize(g.context, policy.ALLOCATION % "list")
        # No 404: an unknown consumer simply holds nothing.
        found = self.allocations.get_all_by_consumer_id(consumer_uuid)
        return util.send(_serialize_allocations_for_consumer(found))

    @upstream(PATH, "list_for_resource_provider")
    def list_for_resource_provider(self, uuid: str):
        policy.authorize(g.context, "placement:resource_providers:allocations:list")
        provider = get_provider_or_404(
            self.providers, uuid,
            f"Resource provider '{uuid}' not found: No resource provider with uuid {uuid} "
            "found")
        by_consumer: dict[str, dict] = {}
        for allocation in self.allocations.get_all_by_resource_provider(provider):
            entry = by_consumer.setdefault(allocation.consumer.uuid, {"resources": {}})
            entry["resources"][allocation.resource_class] = allocation.used
            if microversion.matches(microversion.CONSUMER_GENERATION):
                entry["consumer_generation"] = allocation.consumer.generation
        return util.send({"allocations": by_consumer,
                          "resource_provider_generation": provider.generation})

    def _replace(self, wanted: list[ConsumerAllocations]) -> None:
        """``replace_all``, its errors answered as upstream answers them."""
        try:
            self.allocations.replace_all(wanted)
        except exception.ResourceProviderNotFound as exc:
            raise exception.BadRequest(f"Allocation for resource provider "
                                       f"'{exc.kwargs['uuid']}' that does not exist.") from exc
        except exception.ResourceClassNotFound as exc:
            consumers = ", ".join(w.consumer_uuid for w in wanted)
            raise exception.BadRequest(f"Unable to allocate inventory for consumer {consumers}: "
                                       f"{exc}") from exc
        except exception.InvalidInventory as exc:
            raise exception.Conflict(f"Unable to allocate inventory: {exc}") from exc
        except ConsumerGenerationConflict as exc:
            raise exception.Conflict(str(exc), error_code=errors.CONCURRENT_UPDATE) from exc
        except exception.ConcurrentUpdateDetected as exc:
            raise exception.Conflict("Inventory and/or allocations changed while attempting "
                                     f"to allocate: {exc}",
                                     error_code=errors.CONCURRENT_UPDATE) from exc

    @upstream(PATH, "set_allocations_for_consumer")
    @util.body_schemas(schemas.PUT_ALLOCATIONS)
    def set_allocations_for_consumer(self, consumer_uuid: str):
        policy.authorize(g.context, policy.ALLOCATION % "update")
        try:
            consumer_uuid = str(uuidlib.UUID(consumer_uuid))
        except ValueError:
            raise exception.BadRequest(f"Malformed consumer_uuid: {consumer_uuid}") from None
        data = util.extract_json()
        self._replace([_consumer_allocations(consumer_uuid, data)])
        return util.send(None, status=204)

    @upstream(PATH, "set_allocations")
    @microversion.version_handler(microversion.POST_ALLOCATIONS)
    @util.body_schemas(schemas.POST_ALLOCATIONS)
    def set_allocations(self):
        policy.authorize(g.context, policy.ALLOCATION % "manage")
        data = util.extract_json()
        self._replace([_consumer_allocations(consumer_uuid, body)
                       for consumer_uuid, body in data.items()])
        return util.send(None, status=204)

    @upstream(PATH, "delete_allocations")
    def delete_allocations(self, consumer_uuid: str):
        policy.authorize(g.context, policy.ALLOCATION % "delete")
        if not self.allocations.delete_all(consumer_uuid):
            raise exception.NotFound(f"No allocations for consumer '{consumer_uuid}'")
        return util.send(None, status=204)
