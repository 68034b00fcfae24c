"""Nova's own exceptions, beyond the tree every service shares (``nova/exception.py``).

They subclass ``novalab.reference.common.exception`` classes, so the API still
turns them into the right fault (``NotFound`` is a 404 ``itemNotFound``).
"""

from __future__ import annotations

from novalab.reference.common import exception
from novalab.reference.common.quota import OverQuota


class InstanceActionNotFound(exception.NotFound):
    msg_fmt = "Action for request_id %(request_id)s on instance %(instance_uuid)s not found"


class InstanceActionEventNotFound(exception.NotFound):
    msg_fmt = "Event %(event)s not found for action id %(action_id)s"


class InstanceNotRunning(exception.Invalid):
    msg_fmt = "Instance %(instance_id)s is not running."


class UnshelveException(exception.NovaLabException):
    msg_fmt = "Error during unshelve instance %(instance_id)s: %(reason)s"


class InvalidKeypair(exception.Invalid):
    msg_fmt = "Keypair data is invalid: %(reason)s"


class KeypairNotFound(exception.NotFound):
    msg_fmt = "Keypair %(name)s not found for user %(user_id)s"


class KeyPairExists(exception.Conflict):
    msg_fmt = "Key pair '%(key_name)s' already exists."


class KeypairLimitExceeded(exception.Forbidden):
    """An ``OverQuota`` upstream: a 403 with no quota figures in it."""

    msg_fmt = "Quota exceeded, too many key pairs."


class MarkerNotFound(exception.NotFound):
    msg_fmt = "Marker %(marker)s could not be found."


class MetadataLimitExceeded(OverQuota):
    """A ``QuotaError`` upstream (403): more metadata items than ``metadata_items``."""

    msg_fmt = "Maximum number of metadata items exceeds %(allowed)d"


class InstanceIsLocked(exception.Conflict):
    msg_fmt = "Instance %(instance_uuid)s is locked"


class InstanceTagNotFound(exception.NotFound):
    msg_fmt = "Instance %(instance_id)s has no tag '%(tag)s'"


class ConsoleNotAvailable(exception.NotFound):
    msg_fmt = "Guest does not have a console available."


class InstanceNotReady(exception.Conflict):
    msg_fmt = "Instance %(instance_id)s is not ready"


class HostBinaryNotFound(exception.NotFound):
    msg_fmt = "Compute host %(host)s with binary %(binary)s could not be found."


class FlavorExists(exception.Conflict):
    msg_fmt = "Flavor with name %(name)s already exists."


class FlavorIdExists(exception.Conflict):
    msg_fmt = "Flavor with ID %(flavor_id)s already exists."


class FlavorExtraSpecUpdateCreateFailed(exception.Conflict):
    msg_fmt = "Flavor %(id)s extra spec cannot be updated or created after %(retries)d retries."


class FlavorExtraSpecsNotFound(exception.NotFound):
    msg_fmt = "Flavor %(flavor_id)s has no extra specs with key %(extra_specs_key)s."


class FlavorAccessExists(exception.Conflict):
    msg_fmt = ("Flavor access already exists for flavor %(flavor_id)s and project "
               "%(project_id)s combination.")


class FlavorAccessNotFound(exception.NotFound):
    msg_fmt = "Flavor access not found for %(flavor_id)s / %(project_id)s combination."
