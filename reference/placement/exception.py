"""Placement's exceptions: the HTTP errors its handlers raise and the object errors
they translate (``placement/exception.py``, webob's ``HTTPConflict(..., comment=code)``).

An :class:`HTTPError` carries its status (``code``) and its placement error code
(``error_code``), which the app renders as placement's error body (see
``handlers/util.py``). The object errors below are what the database layer
raises; each handler turns them into the status upstream answers with, and
their messages are upstream's.
"""

from __future__ import annotations

from novalab.reference.common import exception
from novalab.reference.placement import errors


class HTTPError(exception.NovaLabException):
    """An error answered with ``code`` and placement error code ``error_code``."""

    msg_fmt = ""

    def __init__(self, message: str | None = None, error_code: str = errors.DEFAULT,
                 **kwargs):
        super().__init__(message, **kwargs)
        self.error_code = error_code


class BadRequest(HTTPError):
    code = 400


class Forbidden(HTTPError):
    code = 403
    msg_fmt = "Policy does not allow %(action)s to be performed."


class NotFound(HTTPError):
    code = 404


class MethodNotAllowed(HTTPError):
    code = 405
    msg_fmt = "The method specified is not allowed for this resource."


class NotAcceptable(HTTPError):
    code = 406


class Conflict(HTTPError):
    code = 409


class UnsupportedMediaType(HTTPError):
    code = 415


# -- raised by the objects, translated by the handlers ------------------------------------

class PlacementObjectError(Exception):
    msg_fmt = ""

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        super().__init__(self.msg_fmt % kwargs if kwargs else self.msg_fmt)


class ResourceProviderNotFound(PlacementObjectError):
    msg_fmt = "No resource provider with uuid %(uuid)s found"


class ResourceClassNotFound(PlacementObjectError):
    msg_fmt = "No such resource class %(name)s."


class TraitNotFound(PlacementObjectError):
    msg_fmt = "No such trait(s): %(name)s."


class ConcurrentUpdateDetected(PlacementObjectError):
    msg_fmt = "Another thread concurrently updated the data. Please retry your update"


class ResourceProviderConcurrentUpdateDetected(ConcurrentUpdateDetected):
    msg_fmt = ("Another thread concurrently updated the resource provider data. "
               "Please retry your update")


class DuplicateProvider(PlacementObjectError):
    msg_fmt = "%(duplicate)s"


class ObjectActionError(PlacementObjectError):
    msg_fmt = "Object action %(action)s failed because: %(reason)s"


class ResourceProviderInUse(PlacementObjectError):
    msg_fmt = "Resource provider has allocations."


class CannotDeleteParentResourceProvider(PlacementObjectError):
    msg_fmt = ("Cannot delete resource provider that is a parent of another. "
               "Delete child providers first.")


class InventoryNotFound(PlacementObjectError):
    msg_fmt = "No inventory of class %(resource_class)s found for delete"


class InvalidInventory(PlacementObjectError):
    msg_fmt = ("Inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s' invalid.")


class InvalidInventoryCapacity(InvalidInventory):
    msg_fmt = ("Invalid inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The reserved value is greater than or equal to total.")


class InvalidInventoryCapacityReservedCanBeTotal(InvalidInventoryCapacity):
    msg_fmt = ("Invalid inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The reserved value is greater than total.")


class InventoryInUse(InvalidInventory):
    msg_fmt = ("Inventory for '%(resource_classes)s' on resource provider "
               "'%(resource_provider)s' in use.")


class InvalidAllocationCapacityExceeded(InvalidInventory):
    msg_fmt = ("Unable to create allocation for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The requested amount would exceed the capacity.")


class InvalidAllocationConstraintsViolated(InvalidInventory):
    msg_fmt = ("Unable to create allocation for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The requested amount would violate inventory "
               "constraints.")
