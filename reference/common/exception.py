"""The exception tree shared by the reference services.

Named after Nova's (``nova/exception.py``). Each carries the HTTP ``code`` the API
turns it into, so a fault raised deep in a service reaches the client as an
OpenStack fault body with the right status. Exceptions cross RPC by class name:
the RPC layer re-raises any class defined here on the caller's side.
"""

from __future__ import annotations


class NovaLabException(Exception):
    """Base: ``msg_fmt`` is formatted with the keyword arguments given."""

    msg_fmt = "An unknown exception occurred."
    code = 500

    def __init__(self, message: str | None = None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self) -> str:
        return self.message


class Invalid(NovaLabException):
    msg_fmt = "Bad Request - Invalid Parameters"
    code = 400


class ValidationError(Invalid):
    msg_fmt = "%(detail)s"


class NotAuthorized(NovaLabException):
    msg_fmt = "The request you have made requires authentication."
    code = 401


class Forbidden(NovaLabException):
    msg_fmt = "Policy doesn't allow %(action)s to be performed."
    code = 403


class NotFound(NovaLabException):
    msg_fmt = "Resource could not be found."
    code = 404


class Conflict(NovaLabException):
    code = 409


class ServiceUnavailable(NovaLabException):
    msg_fmt = "The service is temporarily unavailable."
    code = 503


class DatabaseFull(ServiceUnavailable):
    """The database cannot grow (its disk is full): writes fail, reads do not, and
    writes work again once space is freed, with nothing restarted. A 503, never a
    500: the service is sound, its storage is not (``db.is_storage_full``)."""

    msg_fmt = ("The service cannot write to its database: the disk is full. Try again "
               "once space has been freed.")


class InstanceNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s could not be found."


class FlavorNotFound(NotFound):
    msg_fmt = "Flavor %(flavor_id)s could not be found."


class ImageNotFound(NotFound):
    msg_fmt = "Image %(image_id)s could not be found."


class ComputeHostNotFound(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


class ServiceNotFound(NotFound):
    msg_fmt = "Service %(service_id)s could not be found."


class InstanceInvalidState(Conflict):
    msg_fmt = ("Instance %(instance_uuid)s in %(attr)s %(state)s. Cannot %(method)s while "
               "the instance is in this state.")


class UnexpectedTaskStateError(Conflict):
    msg_fmt = (
        "Conflict updating instance %(instance_uuid)s. "
        "Expected: %(expected)s. Actual: %(actual)s"
    )


class UnexpectedDeletingTaskStateError(UnexpectedTaskStateError):
    """The instance is being deleted: whatever worked on it stops (and cleans up)."""


class NoValidHost(NovaLabException):
    msg_fmt = "No valid host was found. %(reason)s"


class BuildAbortException(NovaLabException):
    msg_fmt = "Build of instance %(instance_uuid)s aborted: %(reason)s"


class RescheduledException(NovaLabException):
    msg_fmt = "Build of instance %(instance_uuid)s was re-scheduled: %(reason)s"


class HypervisorUnavailable(NovaLabException):
    msg_fmt = "Connection to the hypervisor is broken on host: %(host)s"


class InstanceDeployFailure(NovaLabException):
    msg_fmt = "Failed to deploy instance: %(reason)s"


class ImageUnacceptable(Invalid):
    msg_fmt = "Image %(image_id)s is unacceptable: %(reason)s"


class VirtualInterfaceCreateException(NovaLabException):
    msg_fmt = "Virtual Interface creation failed: %(reason)s"


class GlanceConnectionFailed(NovaLabException):
    msg_fmt = "Connection to glance host %(server)s failed: %(reason)s"


class MessagingTimeout(NovaLabException):
    msg_fmt = "Timed out waiting for a reply to message ID %(msg_id)s"
    code = 504


class RemoteError(NovaLabException):
    """An exception raised by an RPC server that the caller cannot rebuild."""

    msg_fmt = "Remote error: %(exc_type)s %(value)s"


def find(name: str) -> type[NovaLabException] | None:
    """The exception class named ``name`` in this module, if any."""
    obj = globals().get(name)
    if isinstance(obj, type) and issubclass(obj, NovaLabException):
        return obj
    return None
