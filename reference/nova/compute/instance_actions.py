"""The names of instance actions (``nova/compute/instance_actions.py``) novalab records.

Each is recorded by nova-api when it accepts the request, under the request id
it answers with; ``openstack server event list`` shows them. The spelling is
upstream's, camel case included (``shelveOffload``, ``createImage``).
"""

CREATE = "create"
DELETE = "delete"
SHELVE = "shelve"
SHELVE_OFFLOAD = "shelveOffload"
UNSHELVE = "unshelve"
CREATE_IMAGE = "createImage"
ATTACH_VOLUME = "attach_volume"
DETACH_VOLUME = "detach_volume"
STOP = "stop"
START = "start"
REBOOT = "reboot"
PAUSE = "pause"
UNPAUSE = "unpause"
SUSPEND = "suspend"
RESUME = "resume"
LOCK = "lock"
UNLOCK = "unlock"
