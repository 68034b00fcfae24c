"""RAMWeigher: prefer the host with the most free memory, spreading instances out.

``[filter_scheduler] ram_weight_multiplier`` below zero does the opposite: the
host with the least free memory wins, so hosts fill up one by one (stacking).
"""

from __future__ import annotations

from novalab.reference.nova.scheduler.conf import DEFAULT_RAM_WEIGHT_MULTIPLIER
from novalab.reference.nova.scheduler.weights import BaseHostWeigher


class RAMWeigher(BaseHostWeigher):
    minval = 0

    def weight_multiplier(self, host_state) -> float:
        """``ram_weight_multiplier`` (upstream also reads it from aggregate metadata)."""
        if self.conf is None:
            return DEFAULT_RAM_WEIGHT_MULTIPLIER
        return self.conf.ram_weight_multiplier

    def _weigh_object(self, host_state, weight_properties) -> float:
        """Higher weights win; spreading is the default."""
        return host_state.free_ram_mb
