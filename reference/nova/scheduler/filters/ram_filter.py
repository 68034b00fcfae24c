"""RamFilter: enough memory left, counting ``ram_allocation_ratio`` overcommit."""

from novalab.reference.nova.scheduler.filters import BaseHostFilter


class RamFilter(BaseHostFilter):
    def host_passes(self, host_state, spec_obj) -> bool:
        requested = spec_obj["flavor"]["memory_mb"]
        limit = host_state.total_usable_ram_mb * host_state.ram_allocation_ratio
        used = host_state.total_usable_ram_mb - host_state.free_ram_mb
        return limit - used >= requested
