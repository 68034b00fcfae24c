"""ComputeFilter: only hosts whose nova-compute service is enabled and alive."""

from novalab.reference.nova.scheduler.filters import BaseHostFilter


class ComputeFilter(BaseHostFilter):
    def host_passes(self, host_state, spec_obj) -> bool:
        return host_state.service_up and not host_state.service_disabled
