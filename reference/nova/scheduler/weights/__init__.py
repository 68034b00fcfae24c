"""Weighers rank the hosts that passed the filters; the best-weighed host wins.

As upstream (``nova/weights.py``, ``nova/scheduler/weights/__init__.py``): each
weigher gives every host a raw value, the handler normalises those to 0..1
(``minval``/``maxval`` fix the ends where a weigher sets them), multiplies them
by the weigher's ``weight_multiplier`` and adds them up. The hosts are returned
best first; with equal weights, in the order they came (the sort is stable).
"""

from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)


def normalize(weight_list, minval=None, maxval=None) -> list[float]:
    """Scale to 0..1 between ``minval`` and ``maxval`` (the list's own, if not given).

    All values equal: all 0.
    """
    if not weight_list:
        return []
    maxval = float(max(weight_list) if maxval is None else maxval)
    minval = float(min(weight_list) if minval is None else minval)
    if minval == maxval:
        return [0.0] * len(weight_list)
    return [(value - minval) / (maxval - minval) for value in weight_list]


class WeighedHost:
    """A host state and its weight."""

    def __init__(self, obj, weight: float):
        self.obj = obj
        self.weight = weight

    def __repr__(self):
        return f"WeighedHost [host: {self.obj.host!r}, weight: {self.weight}]"


class BaseHostWeigher:
    """Base class for host weighers: subclasses implement ``_weigh_object``."""

    minval: float | None = None
    maxval: float | None = None

    def __init__(self, conf=None):
        # The [filter_scheduler] options in force (conf.FilterSchedulerConf), where
        # upstream reads the global CONF.
        self.conf = conf

    def weight_multiplier(self, host_state) -> float:
        """How much this weigher counts (overridden to read a ``*_weight_multiplier``)."""
        return 1.0

    def _weigh_object(self, host_state, weight_properties) -> float:
        raise NotImplementedError()

    def weigh_objects(self, weighed_obj_list, weight_properties) -> list[float]:
        """The raw weight of each host, kept within ``minval``..``maxval``."""
        weights = []
        for obj in weighed_obj_list:
            weight = self._weigh_object(obj.obj, weight_properties)
            if self.minval is not None:
                weight = max(weight, self.minval)
            if self.maxval is not None:
                weight = min(weight, self.maxval)
            weights.append(weight)
        return weights


def get_weighed_objects(weighers, obj_list, weighing_properties) -> list[WeighedHost]:
    """Hosts with their summed, normalised weights, best first
    (``BaseWeightHandler.get_weighed_objects``). One host or none: no weighing."""
    weighed = [WeighedHost(obj, 0.0) for obj in obj_list]
    if len(weighed) <= 1:
        return weighed
    for weigher in weighers:
        raw = weigher.weigh_objects(weighed, weighing_properties)
        for obj, weight in zip(weighed, normalize(raw, weigher.minval, weigher.maxval),
                               strict=True):
            obj.weight += weigher.weight_multiplier(obj.obj) * weight
        if LOG.isEnabledFor(logging.DEBUG):  # the dict names every host: build it only then
            LOG.debug("%s: raw weights %s", type(weigher).__name__,
                      {obj.obj.host: value for obj, value in zip(weighed, raw, strict=True)})
    return sorted(weighed, key=lambda w: w.weight, reverse=True)


def all_weighers() -> list[type]:
    """Every weigher class shipped with novalab (upstream's ``weight_classes`` default)."""
    from novalab.reference.nova.scheduler.weights.ram import RAMWeigher

    return [RAMWeigher]
