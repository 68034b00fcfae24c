"""Allocation candidates (``placement/objects/allocation_candidate.py``): where could a
request for ``VCPU:1,MEMORY_MB:64,DISK_GB:1`` be allocated, and how full is each place?

For each provider tree (a root and its descendants) and each *request group*:

- the unnumbered group (``resources=``) may take each class from any provider
  of the tree: one *slot* per class, its choices the providers that fit;
- a numbered group (``resources1=``, from 1.25) takes all its classes from one
  provider: one slot, its choices the providers that fit them all.

A provider fits ``amount`` of a class when it has that inventory, ``amount`` is
within ``min_unit``..``max_unit`` and a multiple of ``step_size``, and
``used + amount <= (total - reserved) * allocation_ratio``. Every combination
of one choice per slot is an *allocation request* (the body for ``PUT
/allocations``) once the amounts it puts on one provider still fit together
(and, with ``group_policy=isolate``, numbered groups use different providers).
Before 1.29 placement was blind to trees: a request spanning two providers of
one tree is dropped. The *provider summaries* give each provider of the trees
in play its capacity and usage per class, what a scheduler weighs hosts by.

Upstream finds all this with SQL over the whole cloud; novalab's clouds are a
few providers, so three queries read them and the combinations are made here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from novalab.reference.common.db import Database
from novalab.reference.placement.objects.resource_provider import (
    Inventory,
    ResourceProvider,
    inventories_by_provider,
    provider_from_row,
    provider_query,
    usage_by_provider,
)
from novalab.tracing.spans import upstream

PATH = "placement/objects/allocation_candidate.py"


@dataclass
class RequestGroup:
    """``resources{suffix}`` (and its ``member_of``): ``use_same_provider`` when numbered."""

    suffix: str
    resources: dict[str, int]
    member_of: list[list[str]] = field(default_factory=list)

    @property
    def use_same_provider(self) -> bool:
        return self.suffix != ""


@dataclass
class ProviderSummary:
    provider: ResourceProvider
    inventories: dict[str, Inventory]
    usage: dict[str, int]

    def resources(self, classes=None) -> dict[str, dict[str, int]]:
        return {rc: {"capacity": inventory.capacity, "used": self.usage.get(rc, 0)}
                for rc, inventory in self.inventories.items()
                if classes is None or rc in classes}


class AllocationCandidates:
    """The allocation candidate search of one placement-api."""

    def __init__(self, db: Database, tracer):
        self.db = db
        self.tracer = tracer

    @upstream(PATH, "AllocationCandidates.get_by_requests")
    def get_by_requests(self, groups: list[RequestGroup], group_policy: str | None = None,
                        nested_aware: bool = True, limit: int | None = None
                        ) -> tuple[list[dict[str, dict[str, int]]], list[ProviderSummary]]:
        """``(allocation requests, provider summaries)``: each request is
        ``{provider uuid: {class: amount}}``."""
        query, _ = provider_query()
        with self.db.session() as session:
            providers = [provider_from_row(row) for row in session.execute(query)]
            ids = [p.id for p in providers]
            inventories = inventories_by_provider(session, ids)
            used = usage_by_provider(session, ids)
        usage = {p.id: {rc: used.get((p.id, rc), 0) for rc in inventories.get(p.id, {})}
                 for p in providers}
        trees: dict[str, list[ResourceProvider]] = {}
        for provider in providers:
            trees.setdefault(provider.root_provider_uuid, []).append(provider)

        requests: list[dict[str, dict[str, int]]] = []
        in_play: list[str] = []   # the roots of the trees requests came from
        for root, members in trees.items():
            found = self._tree_requests(members, groups, group_policy, inventories, usage)
            if not nested_aware:
                found = [r for r in found if len(r) == 1]
            if found:
                requests += [r for r in found if r not in requests]
                in_play.append(root)
        if limit is not None and len(requests) > limit:
            requests = requests[:limit]
            kept = {p.root_provider_uuid for p in providers
                    if any(p.uuid in r for r in requests)}
            in_play = [root for root in in_play if root in kept]
        used_uuids = {uuid for r in requests for uuid in r}
        summaries = [ProviderSummary(p, inventories.get(p.id, {}), usage[p.id])
                     for root in in_play for p in trees[root]
                     if nested_aware or p.uuid in used_uuids]
        return requests, summaries

    @staticmethod
    def _tree_requests(members, groups, group_policy, inventories, usage) -> list[dict]:
        def fits(provider, rc, amount):
            inventory = inventories.get(provider.id, {}).get(rc)
            return inventory is not None and inventory.fits(amount, usage[provider.id][rc])

        def room(provider, rc, amount):   # a merged amount: capacity and max_unit only
            inventory = inventories[provider.id][rc]
            return usage[provider.id][rc] + amount <= inventory.capacity and \
                amount <= inventory.max_unit

        slots: list[list[list[tuple]]] = []   # slot -> choices -> [(provider, rc, amount)]
        numbered: list[int] = []               # the slots of numbered groups
        for group in groups:
            if group.member_of:   # no provider here is in any aggregate
                return []
            if group.use_same_provider:
                numbered.append(len(slots))
                slots.append([[(p, rc, n) for rc, n in group.resources.items()] for p in members
                              if all(fits(p, rc, n) for rc, n in group.resources.items())])
            else:
                slots += [[[(p, rc, n)] for p in members if fits(p, rc, n)]
                          for rc, n in group.resources.items()]
        found = []
        for combination in itertools.product(*slots):
            if group_policy == "isolate":
                chosen = [combination[i][0][0].id for i in numbered]
                if len(set(chosen)) != len(chosen):
                    continue
            merged: dict[str, dict[str, int]] = {}
            by_uuid = {}
            for choice in combination:
                for provider, rc, amount in choice:
                    by_uuid[provider.uuid] = provider
                    resources = merged.setdefault(provider.uuid, {})
                    resources[rc] = resources.get(rc, 0) + amount
            # Two groups on one provider must still fit together (``_exceeds_capacity``).
            if merged not in found and all(room(by_uuid[uuid], rc, amount)
                                           for uuid, resources in merged.items()
                                           for rc, amount in resources.items()):
                found.append(merged)
        return found
