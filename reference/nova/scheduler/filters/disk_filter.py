"""DiskFilter: enough local disk for root + ephemeral, counting ``disk_allocation_ratio``."""

from novalab.reference.nova.scheduler.filters import BaseHostFilter


class DiskFilter(BaseHostFilter):
    def host_passes(self, host_state, spec_obj) -> bool:
        flavor = spec_obj["flavor"]
        requested = flavor["root_gb"] + flavor.get("ephemeral_gb", 0)
        limit = host_state.total_usable_disk_gb * host_state.disk_allocation_ratio
        used = host_state.total_usable_disk_gb - host_state.free_disk_gb
        return limit - used >= requested
