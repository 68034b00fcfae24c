"""Placement in small: resource providers, their inventories, and who uses what.

Placement (``openstack/placement``, split out of Nova in Stein) answers the
scheduler's question "which hosts can hold this much VCPU, MEMORY_MB and
DISK_GB?" with ``GET /allocation_candidates``, and then records the claim as
*allocations* of a *consumer* (the instance) against *resource providers*
(the compute nodes). Every write to a provider's inventory or allocations bumps
its *generation*, every write of a consumer's allocations its consumer
generation; a writer that read an older generation gets a 409
(``placement.concurrent_update``) and must read again. That is how many
schedulers and compute hosts share one view without locks.

``placement-api`` is a REST service of its own (port key ``"placement"``, 8778),
with microversions (``OpenStack-API-Version: placement 1.X``), keystone auth,
its own policy and upstream's error bodies. See docs/placement.md.
"""
