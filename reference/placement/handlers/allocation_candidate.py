"""``GET /allocation_candidates`` (1.10; ``placement/handlers/allocation_candidate.py``).

``?resources=VCPU:1,MEMORY_MB:64,DISK_GB:1`` answers ``allocation_requests``,
each a body ready for ``PUT /allocations/{consumer_uuid}`` (the list form before
1.12), and ``provider_summaries``: each provider's ``capacity`` and ``used`` per
class (only the requested classes before 1.27, all from 1.27), its ``traits``
from 1.17 (always none here) and its tree from 1.29. ``limit`` (1.16) keeps
the first N requests; ``resourcesN`` groups (1.25) must each come from one
provider, ``group_policy=isolate`` from different ones. ``member_of`` finds
nothing and any ``required`` trait is unknown: novalab keeps no aggregates or
traits.
"""

from __future__ import annotations

import re

from flask import g, request

from novalab.reference.placement import exception, microversion, policy, schemas
from novalab.reference.placement.handlers import util
from novalab.reference.placement.objects import resource_class
from novalab.reference.placement.objects.allocation_candidate import (
    AllocationCandidates,
    RequestGroup,
)
from novalab.tracing.spans import upstream

_GROUP_KEY = re.compile(r"^(resources|required|member_of)([1-9][0-9]*)?$")


def _groups() -> list[RequestGroup]:
    """The request groups of the query string (``RequestGroup.dict_from_request``)."""
    by_suffix: dict[str, dict] = {}
    for key, value in request.args.items():
        match = _GROUP_KEY.match(key)
        if match:
            by_suffix.setdefault(match[2] or "", {})[match[1]] = value
    orphans = [f"{kind}{suffix}" for suffix, group in by_suffix.items()
               for kind in ("required", "member_of") if kind in group and "resources" not in group]
    if orphans:
        raise exception.BadRequest("All traits and member_of parameters must be associated "
                                   f"with resources. Found orphaned keys: {', '.join(orphans)}")
    if not by_suffix:
        raise exception.BadRequest("At least one request group (`resources` or "
                                   "`resources{$S}`) is required.")
    groups = []
    for suffix, group in sorted(by_suffix.items()):
        resources = util.normalize_resources_qs_param(group["resources"])
        for rc in resources:
            try:
                resource_class.ensure(rc)
            except exception.ResourceClassNotFound as exc:
                raise exception.BadRequest(
                    f"Invalid resource class in resources parameter: {exc}") from exc
        member_of = [util.normalize_member_of_qs_param(group["member_of"])] \
            if "member_of" in group else []
        if "required" in group:
            util.check_traits(group["required"])
        groups.append(RequestGroup(suffix, resources, member_of))
    return groups


class AllocationCandidateHandler:
    def __init__(self, candidates: AllocationCandidates, tracer):
        self.candidates = candidates
        self.tracer = tracer

    @upstream("placement/handlers/allocation_candidate.py", "list_allocation_candidates")
    @microversion.version_handler(microversion.ALLOCATION_CANDIDATES)
    def list_allocation_candidates(self):
        policy.authorize(g.context, "placement:allocation_candidates:list")
        params = util.validate_query_params(schemas.GET_ALLOCATION_CANDIDATES)
        groups = _groups()
        group_policy = params.get("group_policy")
        if not group_policy and sum(group.use_same_provider for group in groups) > 1:
            raise exception.BadRequest('The "group_policy" parameter is required when '
                                       'specifying more than one "resources{N}" parameter.')
        limit = int(params["limit"]) if "limit" in params else None
        requests, summaries = self.candidates.get_by_requests(
            groups, group_policy, nested_aware=microversion.matches(
                microversion.NESTED_CANDIDATES), limit=limit)
        return util.send({"allocation_requests": [_request(r) for r in requests],
                          "provider_summaries": _summaries(summaries, groups)})


def _request(allocation_request: dict[str, dict[str, int]]) -> dict:
    if microversion.matches(microversion.ALLOCATIONS_DICT):
        return {"allocations": {uuid: {"resources": resources}
                                for uuid, resources in allocation_request.items()}}
    return {"allocations": [{"resource_provider": {"uuid": uuid}, "resources": resources}
                            for uuid, resources in allocation_request.items()]}


def _summaries(summaries, groups: list[RequestGroup]) -> dict:
    requested = None if microversion.matches(microversion.SUMMARIES_ALL_RESOURCES) else \
        {rc for group in groups for rc in group.resources}
    found = {}
    for summary in summaries:
        entry = {"resources": summary.resources(requested)}
        if microversion.matches(microversion.CANDIDATES_TRAITS):
            entry["traits"] = []
        if microversion.matches(microversion.NESTED_CANDIDATES):
            entry["parent_provider_uuid"] = summary.provider.parent_provider_uuid
            entry["root_provider_uuid"] = summary.provider.root_provider_uuid
        found[summary.provider.uuid] = entry
    return found
