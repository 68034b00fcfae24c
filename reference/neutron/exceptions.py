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


# The security-group extension's (neutron/extensions/securitygroup.py).

class SecurityGroupNotFound(NotFound):
    message = "Security group %(id)s does not exist"


class SecurityGroupRuleNotFound(NotFound):
    message = "Security group rule %(id)s does not exist"


class InUse(Conflict):
    message = "The resource is in use."


class SecurityGroupInUse(InUse):
    message = "Security Group %(id)s %(reason)s."

    def __init__(self, **kwargs):
        kwargs.setdefault("reason", "in use")
        super().__init__(**kwargs)


class SecurityGroupCannotRemoveDefault(InUse):
    message = "Insufficient rights for removing default security group."


class SecurityGroupCannotUpdateDefault(InUse):
    message = "Updating default security group not allowed."


class SecurityGroupDefaultAlreadyExists(InUse):
    message = "Default security group already exists."


class SecurityGroupRuleExists(InUse):
    message = "Security group rule already exists. Rule id is %(rule_id)s."


class SecurityGroupConflict(Conflict):
    message = "Error %(reason)s while attempting the operation."


class SecurityGroupRuleInvalidProtocol(InvalidInput):
    message = ("Security group rule protocol %(protocol)s not supported. Only protocol "
               "values %(values)s and integer representations [0 to 255] are supported.")


class SecurityGroupProtocolRequiredWithPorts(InvalidInput):
    message = "Must also specify protocol if port range is given."


class SecurityGroupInvalidPortRange(InvalidInput):
    message = "For TCP/UDP protocols, port_range_min must be <= port_range_max"


class SecurityGroupInvalidPortValue(InvalidInput):
    message = "Invalid value for port %(port)s"


class SecurityGroupInvalidIcmpValue(InvalidInput):
    message = ("Invalid value for ICMP %(field)s (%(attr)s) %(value)s. It must be 0 to "
               "255.")


class SecurityGroupMissingIcmpType(InvalidInput):
    message = "ICMP code (port-range-max) %(value)s is provided but ICMP type " \
              "(port-range-min) is missing."


class SecurityGroupInvalidProtocolForPort(InvalidInput):
    message = ("Ports cannot be specified for protocol %(protocol)s. Ports are only "
               "supported for %(valid_port_protocols)s.")


class SecurityGroupMultipleRemoteEntites(InvalidInput):
    message = "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id " \
              "may be provided."


class SecurityGroupRuleParameterConflict(InvalidInput):
    message = "Conflicting value ethertype %(ethertype)s for CIDR %(cidr)s"
