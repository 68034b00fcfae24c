"""Neutron's exceptions (``neutron_lib/exceptions``), each with its HTTP status.

The API renders any of them as Neutron's fault body,
``{"NeutronError": {"type": "PortNotFound", "message": "...", "detail": ""}}``,
where ``type`` is the class name: clients (and Nova) branch on it.
"""

from __future__ import annotations


class NeutronException(Exception):
    message = "An unknown exception occurred."
    code = 500

    def __init__(self, message: str | None = None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.message % kwargs
            except (KeyError, TypeError):
                message = self.message
        self.msg = message
        super().__init__(message)


class BadRequest(NeutronException):
    message = "Bad %(resource)s request: %(msg)s."
    code = 400


class InvalidInput(BadRequest):
    message = "Invalid input for operation: %(error_message)s."


class HTTPBadRequest(BadRequest):
    """A body the resource's attribute map refuses. Upstream's API layer raises webob's
    ``HTTPBadRequest`` for these, so clients see that type in the fault body."""

    message = "Invalid input for operation: %(detail)s"


class NotAuthorized(NeutronException):
    message = "Not authorized."
    code = 403


class PolicyNotAuthorized(NotAuthorized):
    message = "(rule:%(action)s) is disallowed by policy."


class NotFound(NeutronException):
    code = 404


class NetworkNotFound(NotFound):
    message = "Network %(net_id)s could not be found."


class SubnetNotFound(NotFound):
    message = "Subnet %(subnet_id)s could not be found."


class PortNotFound(NotFound):
    message = "Port %(port_id)s could not be found."


class Conflict(NeutronException):
    code = 409


class OverQuota(Conflict):
    message = "Quota exceeded for resources: ['%(overs)s']."


class NetworkInUse(Conflict):
    message = "Unable to complete operation on network %(net_id)s. There are one or more " \
              "ports still in use on the network."


class SubnetInUse(Conflict):
    message = "Unable to complete operation on subnet %(subnet_id)s: %(reason)s."


class IpAddressGenerationFailure(Conflict):
    message = "No more IP addresses available on network %(net_id)s."


class IpAddressAlreadyAllocated(Conflict):
    message = "IP address %(ip)s already allocated in subnet %(subnet_id)s."


class InvalidIpForSubnet(BadRequest):
    message = "IP address %(ip_address)s is not a valid IP for the specified subnet."


class MacAddressInUse(Conflict):
    message = "Unable to complete operation for network %(net_id)s. The mac address " \
              "%(mac)s is in use."
