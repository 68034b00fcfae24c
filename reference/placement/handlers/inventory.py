"""``/resource_providers/{uuid}/inventories[/{resource_class}]``
(``placement/handlers/inventory.py``).

Every write names the ``resource_provider_generation`` it read; a stale one is
a 409 ``placement.concurrent_update`` before anything is written (and the
object layer's guarded ``UPDATE`` catches a writer that slips in between). An
inventory whose capacity is not positive (``reserved`` at or above ``total``;
from 1.26 ``reserved`` may equal ``total``) is a 400; removing a class that
has allocations is a 409 ``placement.inventory.inuse``.
"""

from __future__ import annotations

from flask import g

from novalab.reference.placement import errors, exception, microversion, policy, schemas
from novalab.reference.placement.handlers import util
from novalab.reference.placement.handlers.resource_provider import get_provider_or_404
from novalab.reference.placement.objects.resource_provider import (
    Inventory,
    ResourceProvider,
    ResourceProviders,
)
from novalab.tracing.spans import upstream

PATH = "placement/handlers/inventory.py"


def _serialize_inventory(inventory: Inventory, generation: int | None = None) -> dict:
    data = inventory.values()
    if generation is not None:
        data["resource_provider_generation"] = generation
    return data


def _send_inventories(provider: ResourceProvider, inventories: dict[str, Inventory]):
    return util.send({"resource_provider_generation": provider.generation,
                      "inventories": {rc: _serialize_inventory(i)
                                      for rc, i in inventories.items()}},
                     last_modified=util.newest(*(i.updated_at for i in inventories.values())))


def _make_inventory(provider: ResourceProvider, resource_class: str, data: dict) -> Inventory:
    inventory = Inventory(resource_class, **{k: v for k, v in data.items()
                                             if k in Inventory.FIELDS})
    reserved_can_be_total = microversion.matches(microversion.RESERVED_EQUALS_TOTAL)
    if inventory.capacity < 0 or (inventory.capacity == 0 and not reserved_can_be_total):
        error = exception.InvalidInventoryCapacityReservedCanBeTotal if reserved_can_be_total \
            else exception.InvalidInventoryCapacity
        raise error(resource_class=resource_class, resource_provider=provider.uuid)
    return inventory


def _check_generation(provider: ResourceProvider, data: dict) -> None:
    if data["resource_provider_generation"] != provider.generation:
        raise exception.Conflict("resource provider generation conflict",
                                 error_code=errors.CONCURRENT_UPDATE)


class InventoryHandler:
    def __init__(self, providers: ResourceProviders, tracer):
        self.providers = providers
        self.tracer = tracer

    def _provider(self, uuid: str) -> ResourceProvider:
        return get_provider_or_404(self.providers, uuid,
                                   f"No resource provider with uuid {uuid} found")

    @upstream(PATH, "get_inventories")
    def get_inventories(self, uuid: str):
        policy.authorize(g.context, policy.INVENTORY % "list")
        provider = self._provider(uuid)
        return _send_inventories(provider, self.providers.get_inventories(provider))

    @upstream(PATH, "get_inventory")
    def get_inventory(self, uuid: str, resource_class: str):
        policy.authorize(g.context, policy.INVENTORY % "show")
        provider = self._provider(uuid)
        inventory = self.providers.get_inventories(provider).get(resource_class)
        if inventory is None:
            raise exception.NotFound(f"No inventory of class {resource_class} for {uuid}")
        return util.send(_serialize_inventory(inventory, provider.generation),
                         last_modified=inventory.updated_at)

    @upstream(PATH, "set_inventories")
    @util.body_schemas({(1, 0): schemas.PUT_INVENTORIES})
    def set_inventories(self, uuid: str):
        policy.authorize(g.context, policy.INVENTORY % "update")
        provider = self._provider(uuid)
        data = util.extract_json()
        _check_generation(provider, data)
        try:
            inventories = [_make_inventory(provider, rc, values)
                           for rc, values in data["inventories"].items()]
            self.providers.set_inventory(provider, inventories)
        except exception.ResourceClassNotFound as exc:
            raise exception.BadRequest("Unknown resource class in inventory for resource "
                                       f"provider {uuid}: {exc}") from exc
        except exception.InventoryInUse as exc:
            raise exception.Conflict(f"update conflict: {exc}",
                                     error_code=errors.INVENTORY_INUSE) from exc
        except exception.ConcurrentUpdateDetected as exc:
            raise exception.Conflict(f"update conflict: {exc}",
                                     error_code=errors.CONCURRENT_UPDATE) from exc
        except exception.InvalidInventoryCapacity as exc:
            raise exception.BadRequest("Unable to update inventory for resource provider "
                                       f"{uuid}: {exc}") from exc
        return _send_inventories(provider, {i.resource_class: i for i in inventories})

    @upstream(PATH, "create_inventory")
    @util.body_schemas({(1, 0): schemas.POST_INVENTORY})
    def create_inventory(self, uuid: str):
        policy.authorize(g.context, policy.INVENTORY % "create")
        provider = self._provider(uuid)
        data = util.extract_json()
        resource_class = data.pop("resource_class")
        try:
            inventory = _make_inventory(provider, resource_class, data)
            self.providers.add_inventory(provider, inventory)
        except exception.ConcurrentUpdateDetected as exc:
            raise exception.Conflict(f"Update conflict: {exc}",
                                     error_code=errors.CONCURRENT_UPDATE) from exc
        except (exception.InvalidInventoryCapacity, exception.ResourceClassNotFound) as exc:
            raise exception.BadRequest("Unable to create inventory for resource provider "
                                       f"{uuid}: {exc}") from exc
        return util.send(_serialize_inventory(inventory, provider.generation), status=201,
                         location=f"{util.resource_provider_url(uuid)}/inventories/"
                                  f"{resource_class}")

    @upstream(PATH, "update_inventory")
    @util.body_schemas({(1, 0): schemas.BASE_INVENTORY})
    def update_inventory(self, uuid: str, resource_class: str):
        policy.authorize(g.context, policy.INVENTORY % "update")
        provider = self._provider(uuid)
        data = util.extract_json()
        _check_generation(provider, data)
        try:
            inventory = _make_inventory(provider, resource_class, data)
            self.providers.update_inventory(provider, inventory)
        except exception.ConcurrentUpdateDetected as exc:
            raise exception.Conflict(f"update conflict: {exc}",
                                     error_code=errors.CONCURRENT_UPDATE) from exc
        except (exception.InventoryNotFound, exception.ResourceClassNotFound) as exc:
            raise exception.BadRequest("No inventory record with resource class for resource "
                                       f"provider {uuid}: {exc}") from exc
        except exception.InvalidInventoryCapacity as exc:
            raise exception.BadRequest("Unable to update inventory for resource provider "
                                       f"{uuid}: {exc}") from exc
        return util.send(_serialize_inventory(inventory, provider.generation))

    @upstream(PATH, "delete_inventory")
    def delete_inventory(self, uuid: str, resource_class: str):
        policy.authorize(g.context, policy.INVENTORY % "delete")
        provider = self._provider(uuid)
        try:
            self.providers.delete_inventory(provider, resource_class)
        except (exception.ConcurrentUpdateDetected, exception.InventoryInUse) as exc:
            raise exception.Conflict(
                f"Unable to delete inventory of class {resource_class}: {exc}",
                error_code=errors.CONCURRENT_UPDATE) from exc
        except exception.InventoryNotFound as exc:
            raise exception.NotFound(
                f"No inventory of class {resource_class} found for delete: {exc}") from exc
        return util.send(None, status=204)

    @upstream(PATH, "delete_inventories")
    def delete_inventories(self, uuid: str):
        policy.authorize(g.context, policy.INVENTORY % "delete")
        provider = self._provider(uuid)
        try:
            self.providers.set_inventory(provider, [])
        except exception.ConcurrentUpdateDetected as exc:
            raise exception.Conflict(
                f"Unable to delete inventory for resource provider {uuid} because the "
                "inventory was updated by another process. Please retry your request.",
                error_code=errors.CONCURRENT_UPDATE) from exc
        except exception.InventoryInUse as exc:
            raise exception.Conflict(str(exc), error_code=errors.INVENTORY_INUSE) from exc
        return util.send(None, status=204)
