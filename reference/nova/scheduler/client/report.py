"""Nova's client of placement (``nova/scheduler/client/report.py``), in small.

Each compute host is a resource provider whose inventory (VCPU, MEMORY_MB,
DISK_GB, with the node's allocation ratios) the resource tracker keeps up to
date, so placement can answer the scheduler's allocation candidates. Calls go
with nova's service token (the ``service`` role placement's policy admits) at a
fixed microversion, as upstream pins the versions it needs; a stale provider
generation (409) is read again and retried once, as ``set_inventory_for_provider``
does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)
PATH = "nova/scheduler/client/report.py"
# 1.20: POST /resource_providers answers the provider; 1.28: consumer generations.
PLACEMENT_VERSION = "1.28"
# [scheduler] max_placement_results: how many candidates the scheduler asks for.
CANDIDATE_LIMIT = 1000


class PlacementAPIError(exception.NovaLabException):
    msg_fmt = "Placement answered %(status)s to %(method)s %(path)s: %(detail)s"


class SchedulerReportClient:
    def __init__(self, endpoint: str, http: httpx.Client, tracer, token: Callable[[], str]):
        self.endpoint = endpoint.rstrip("/")
        self.http = http
        self.tracer = tracer
        self.token = token

    def _request(self, method: str, path: str, json: dict | None = None) -> httpx.Response:
        return self.http.request(method, f"{self.endpoint}{path}", json=json, headers={
            "X-Auth-Token": self.token(),
            "OpenStack-API-Version": f"placement {PLACEMENT_VERSION}"})

    def _checked(self, response: httpx.Response, *ok: int) -> httpx.Response:
        if response.status_code in ok:
            return response
        try:
            detail = "; ".join(e.get("detail", "") for e in response.json()["errors"])
        except (ValueError, KeyError, TypeError):
            detail = response.text[:200]
        raise PlacementAPIError(status=response.status_code, method=response.request.method,
                                path=response.request.url.path, detail=detail)

    @upstream(PATH, "SchedulerReportClient._ensure_resource_provider")
    def _ensure_resource_provider(self, context: RequestContext, uuid: str,
                                  name: str) -> dict:
        """The provider ``uuid``, created as ``name`` if placement has none."""
        response = self._request("GET", f"/resource_providers/{uuid}")
        if response.status_code == 200:
            return response.json()
        self._checked(response, 404)
        response = self._request("POST", "/resource_providers", {"uuid": uuid, "name": name})
        if response.status_code == 409:  # another worker made it first
            return self._checked(self._request("GET", f"/resource_providers/{uuid}"),
                                 200).json()
        return self._checked(response, 200).json()

    @upstream(PATH, "SchedulerReportClient.set_inventory_for_provider")
    def set_inventory_for_provider(self, context: RequestContext, rp_uuid: str,
                                   inv_data: dict[str, dict]) -> None:
        """Replace the provider's inventory (``PUT .../inventories``) if it changed."""
        for attempt in (1, 2):
            current = self._checked(
                self._request("GET", f"/resource_providers/{rp_uuid}/inventories"), 200).json()
            if current["inventories"] == inv_data:
                return
            response = self._request("PUT", f"/resource_providers/{rp_uuid}/inventories", {
                "resource_provider_generation": current["resource_provider_generation"],
                "inventories": inv_data})
            if response.status_code == 409 and attempt == 1:
                LOG.info("Provider %s changed meanwhile; reading it again", rp_uuid)
                continue
            self._checked(response, 200)
            return

    # The scheduler's claims (since Pike) -----------------------------------------------------

    @upstream(PATH, "SchedulerReportClient.get_allocation_candidates")
    def get_allocation_candidates(self, context: RequestContext,
                                  resources: dict[str, int]) -> tuple[list, dict]:
        """Which providers could hold ``resources`` (``GET /allocation_candidates``):
        the allocation requests, and a summary of each provider they name."""
        query = ",".join(f"{rc}:{amount}" for rc, amount in sorted(resources.items()))
        body = self._checked(self._request(
            "GET", f"/allocation_candidates?resources={query}&limit={CANDIDATE_LIMIT}"),
            200).json()
        return body["allocation_requests"], body["provider_summaries"]

    @upstream(PATH, "SchedulerReportClient.claim_resources")
    def claim_resources(self, context: RequestContext, consumer_uuid: str,
                        alloc_request: dict, project_id: str, user_id: str) -> bool:
        """Write ``alloc_request`` as the consumer's allocations (``PUT /allocations``).

        A new consumer goes with ``consumer_generation`` null; placement answers
        409 when a provider's generation moved on (someone claimed meanwhile) or
        the capacity is gone: False, and the scheduler tries its next host.
        """
        response = self._request("PUT", f"/allocations/{consumer_uuid}", {
            "allocations": alloc_request["allocations"], "project_id": project_id,
            "user_id": user_id, "consumer_generation": None})
        if response.status_code == 409:
            LOG.info("Claim of %s refused by placement: %s", consumer_uuid,
                     response.text[:300])
            return False
        self._checked(response, 204)
        return True

    @upstream(PATH, "SchedulerReportClient.delete_allocation_for_instance")
    def delete_allocation_for_instance(self, context: RequestContext,
                                       uuid: str) -> bool:
        """Give the instance's resources back (``DELETE /allocations/{uuid}``);
        False when it had none (a 404), as upstream's ``force=True`` delete."""
        response = self._request("DELETE", f"/allocations/{uuid}")
        if response.status_code == 404:
            return False
        self._checked(response, 204)
        return True
