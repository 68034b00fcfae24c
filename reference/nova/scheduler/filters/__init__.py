"""Host filters: each says yes or no to one host for one request.

Like ``nova/scheduler/filters``: a filter is a class with ``host_passes(host_state,
spec)``; the scheduler keeps the hosts every enabled filter passes.
"""

from __future__ import annotations


class BaseHostFilter:
    """A filter; subclasses implement ``host_passes``."""

    def host_passes(self, host_state, spec: dict) -> bool:
        raise NotImplementedError

    def filter_all(self, host_states, spec: dict):
        return [h for h in host_states if self.host_passes(h, spec)]


def all_filters():
    from novalab.reference.nova.scheduler.filters.compute_filter import ComputeFilter
    from novalab.reference.nova.scheduler.filters.core_filter import CoreFilter
    from novalab.reference.nova.scheduler.filters.disk_filter import DiskFilter
    from novalab.reference.nova.scheduler.filters.image_props_filter import (
        ImagePropertiesFilter,
    )
    from novalab.reference.nova.scheduler.filters.ram_filter import RamFilter

    return [ComputeFilter, RamFilter, DiskFilter, CoreFilter, ImagePropertiesFilter]
