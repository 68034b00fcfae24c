"""The names of instance actions (``nova/compute/instance_actions.py``), the two a boot needs.

Each is recorded by nova-api when it accepts the request, under the request id
it answers with; ``openstack server event list`` shows them.
"""

CREATE = "create"
DELETE = "delete"
