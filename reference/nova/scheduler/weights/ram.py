"""RAMWeigher: prefer the host with the most free memory, spreading instances out
(a negative multiplier would stack them instead)."""

from __future__ import annotations


class RAMWeigher:
    multiplier = 1.0

    def weigh_objects(self, host_states) -> list[float]:
        """Free RAM per host, normalised to 0..1 as Nova's weight handler does."""
        raw = [h.free_ram_mb for h in host_states]
        low, high = min(raw, default=0), max(raw, default=0)
        if high == low:
            return [0.0 for _ in raw]
        return [self.multiplier * (value - low) / (high - low) for value in raw]
