"""``/resource_providers`` and ``/resource_providers/{uuid}``
(``placement/handlers/resource_provider.py``): list, create, show, update, delete.

A provider is shown as ``{uuid, name, generation, links}``, with
``parent_provider_uuid`` and ``root_provider_uuid`` from 1.14. Creating one
answers 201 with only a ``Location`` before 1.20, and 200 with the provider
from 1.20. Its links name only the sub-resources novalab serves (inventories,
usages, and allocations from 1.11; not aggregates or traits).
"""

from __future__ import annotations

from flask import g

from novalab.reference.placement import errors, exception, microversion, policy, schemas
from novalab.reference.placement.handlers import util
from novalab.reference.placement.objects import resource_class
from novalab.reference.placement.objects.resource_provider import (
    ResourceProvider,
    ResourceProviders,
    new_uuid,
)
from novalab.tracing.spans import upstream

PATH = "placement/handlers/resource_provider.py"


def serialize_provider(provider: ResourceProvider) -> dict:
    url = util.resource_provider_url(provider.uuid)
    rels = ["inventories", "usages"]
    if microversion.matches(microversion.RP_ALLOCATIONS_LINK):
        rels.append("allocations")
    data = {"uuid": provider.uuid, "name": provider.name, "generation": provider.generation,
            "links": [{"rel": "self", "href": url},
                      *({"rel": rel, "href": f"{url}/{rel}"} for rel in rels)]}
    if microversion.matches(microversion.NESTED_PROVIDERS):
        data["parent_provider_uuid"] = provider.parent_provider_uuid
        data["root_provider_uuid"] = provider.root_provider_uuid
    return data


def modified(provider: ResourceProvider):
    return util.newest(provider.updated_at, provider.created_at)


def get_provider_or_404(providers: ResourceProviders, uuid: str, message: str | None = None
                        ) -> ResourceProvider:
    try:
        return providers.get_by_uuid(uuid)
    except exception.ResourceProviderNotFound as exc:
        raise exception.NotFound(message or str(exc)) from exc


class ResourceProviderHandler:
    def __init__(self, providers: ResourceProviders, tracer):
        self.providers = providers
        self.tracer = tracer

    @upstream(PATH, "list_resource_providers")
    def list_resource_providers(self):
        policy.authorize(g.context, policy.RP % "list")
        params = util.validate_query_params(schemas.GET_RESOURCE_PROVIDERS)
        filters = {key: params[key] for key in ("name", "uuid", "in_tree") if key in params}
        if "resources" in params:
            filters["resources"] = util.normalize_resources_qs_param(params["resources"])
        if "required" in params:
            util.check_traits(params["required"])
        try:
            for rc in filters.get("resources", {}):
                resource_class.ensure(rc)
        except exception.ResourceClassNotFound as exc:
            raise exception.BadRequest(
                f"Invalid resource class in resources parameter: {exc}") from exc
        if "member_of" in params:   # no provider is in an aggregate here
            util.normalize_member_of_qs_param(params["member_of"])
            found = []
        else:
            found = self.providers.get_all_by_filters(filters)
        return util.send({"resource_providers": [serialize_provider(p) for p in found]},
                         last_modified=util.newest(*(modified(p) for p in found)))

    @upstream(PATH, "create_resource_provider")
    @util.body_schemas(schemas.POST_RESOURCE_PROVIDER)
    def create_resource_provider(self):
        policy.authorize(g.context, policy.RP % "create")
        data = util.extract_json()
        uuid = new_uuid(data.get("uuid"))
        try:
            provider = self.providers.create(data["name"], uuid,
                                             data.get("parent_provider_uuid"))
        except exception.DuplicateProvider as exc:
            raise exception.Conflict(f"Conflicting resource provider {exc} already exists.",
                                     error_code=errors.DUPLICATE_NAME) from exc
        except exception.ObjectActionError as exc:
            raise exception.BadRequest(f'Unable to create resource provider "{data["name"]}", '
                                       f"{uuid}: {exc}") from exc
        location = util.resource_provider_url(provider.uuid)
        if microversion.matches(microversion.RP_CREATE_RETURNS_BODY):
            return util.send(serialize_provider(provider), last_modified=modified(provider),
                             location=location)
        return util.send(None, status=201, location=location)

    @upstream(PATH, "get_resource_provider")
    def get_resource_provider(self, uuid: str):
        policy.authorize(g.context, policy.RP % "show")
        provider = get_provider_or_404(self.providers, uuid)
        return util.send(serialize_provider(provider), last_modified=modified(provider))

    @upstream(PATH, "update_resource_provider")
    @util.body_schemas(schemas.PUT_RESOURCE_PROVIDER)
    def update_resource_provider(self, uuid: str):
        policy.authorize(g.context, policy.RP % "update")
        provider = get_provider_or_404(self.providers, uuid)
        data = util.extract_json()
        kwargs = {}
        if "parent_provider_uuid" in data:
            kwargs["parent_provider_uuid"] = data["parent_provider_uuid"]
        try:
            provider = self.providers.save(provider, data["name"], **kwargs)
        except exception.DuplicateProvider as exc:
            raise exception.Conflict(
                f"Conflicting resource provider {data['name']} already exists.",
                error_code=errors.DUPLICATE_NAME) from exc
        except exception.ObjectActionError as exc:
            raise exception.BadRequest(
                f"Unable to save resource provider {uuid}: {exc}") from exc
        return util.send(serialize_provider(provider), last_modified=modified(provider))

    @upstream(PATH, "delete_resource_provider")
    def delete_resource_provider(self, uuid: str):
        policy.authorize(g.context, policy.RP % "delete")
        provider = get_provider_or_404(
            self.providers, uuid, f"No resource provider with uuid {uuid} found for delete")
        try:
            self.providers.destroy(provider)
        except exception.ResourceProviderInUse as exc:
            raise exception.Conflict(f"Unable to delete resource provider {uuid}: {exc}",
                                     error_code=errors.PROVIDER_IN_USE) from exc
        except exception.CannotDeleteParentResourceProvider as exc:
            raise exception.Conflict(
                f"Unable to delete parent resource provider {uuid}: It has child resource "
                "providers.", error_code=errors.PROVIDER_CANNOT_DELETE_PARENT) from exc
        return util.send(None, status=204)
