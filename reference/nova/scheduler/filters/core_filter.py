"""CoreFilter: enough vCPUs left, counting ``cpu_allocation_ratio`` overcommit."""

from novalab.reference.nova.scheduler.filters import BaseHostFilter


class CoreFilter(BaseHostFilter):
    def host_passes(self, host_state, spec_obj) -> bool:
        limit = host_state.vcpus_total * host_state.cpu_allocation_ratio
        return limit - host_state.vcpus_used >= spec_obj["flavor"]["vcpus"]
