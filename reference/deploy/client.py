"""A small OpenStack client: what ``openstack server create --wait`` does, step by step.

It authenticates with Keystone (steps 1-3), looks the flavor and image up by
name as the real client does, posts the server (step 4, answered at step 7) and
polls ``GET /servers/{id}`` (steps 55-58) until the server is ACTIVE or ERROR.
Its HTTP client is traced as the ``novalab-client`` service, so the boot's trace
starts at the user.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from novalab.reference.common import exception

FINAL_STATUSES = {"ACTIVE", "ERROR"}


class ClientError(Exception):
    """An API answered with an error; ``status`` and the fault message are kept."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


def _fault_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict) and len(body) == 1:
        inner = next(iter(body.values()))
        if isinstance(inner, dict) and "message" in inner:
            return inner["message"]
    return str(body)[:300]


class CloudClient:
    def __init__(self, auth_url: str, http: httpx.Client):
        self.auth_url = auth_url.rstrip("/")
        self.http = http
        self.token: str | None = None
        self.catalog: dict[str, str] = {}
        self.project_id: str | None = None

    def _check(self, response: httpx.Response, *ok: int) -> httpx.Response:
        if response.status_code not in ok:
            raise ClientError(response.status_code, _fault_message(response))
        return response

    def _headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.token or "", "Accept": "application/json"}

    def authenticate(self, username: str, password: str, project: str) -> dict:
        body = {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": username, "domain": {"id": "default"}, "password": password}}},
            "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
        response = self._check(self.http.post(f"{self.auth_url}/auth/tokens", json=body), 201)
        token = response.json()["token"]
        self.adopt(response.headers["X-Subject-Token"], token)
        return token

    def adopt(self, token_id: str, token: dict) -> None:
        """Act with ``token_id``, whose body (with its catalog) is ``token``: a service
        acting for the user who sent it."""
        self.token = token_id
        self.project_id = (token.get("project") or {}).get("id")
        self.catalog = {}
        for service in token.get("catalog", []):
            for endpoint in service["endpoints"]:
                if endpoint["interface"] == "public":
                    self.catalog[service["type"]] = endpoint["url"].rstrip("/")

    def endpoint(self, service_type: str) -> str:
        try:
            return self.catalog[service_type]
        except KeyError:
            raise exception.NotFound(f"No '{service_type}' endpoint in the catalog") from None

    def find_flavor(self, name_or_id: str) -> dict:
        compute = self.endpoint("compute")
        response = self.http.get(f"{compute}/flavors/{name_or_id}", headers=self._headers())
        if response.status_code == 200:
            return response.json()["flavor"]
        flavors = self._check(self.http.get(f"{compute}/flavors/detail",
                                            headers=self._headers()), 200).json()["flavors"]
        for flavor in flavors:
            if flavor["name"] == name_or_id:
                return flavor
        raise ClientError(404, f"No Flavor found for {name_or_id}")

    def find_image(self, name_or_id: str) -> dict:
        """The image of that id; else the cloud's public image of that name, the first
        made (the seeded ``cirros``), never a newer one someone else named alike; else
        the caller's own image of that name, if it is the only one (two: ambiguous,
        as ``openstack server create --image NAME`` says)."""
        image_url = f"{self.endpoint('image')}/v2/images"
        response = self.http.get(f"{image_url}/{name_or_id}", headers=self._headers())
        if response.status_code == 200:
            return response.json()
        images = self._check(self.http.get(image_url, params={"name": name_or_id},
                                           headers=self._headers()), 200).json()["images"]
        public = [image for image in images if image["visibility"] == "public"]
        if public:
            return min(public, key=lambda image: image["created_at"])
        if not images:
            raise ClientError(404, f"No Image found for {name_or_id}")
        if len(images) > 1:
            raise ClientError(409, f"More than one Image exists with the name '{name_or_id}'.")
        return images[0]

    def create_server(self, name: str, flavor_id: str, image_id: str, **extra) -> dict:
        body = {"server": {"name": name, "flavorRef": flavor_id, "imageRef": image_id, **extra}}
        response = self.http.post(f"{self.endpoint('compute')}/servers", json=body,
                                  headers=self._headers())
        return self._check(response, 202).json()["server"]

    def get_server(self, server_id: str) -> dict:
        response = self.http.get(f"{self.endpoint('compute')}/servers/{server_id}",
                                 headers=self._headers())
        return self._check(response, 200).json()["server"]

    def delete_server(self, server_id: str) -> None:
        response = self.http.delete(f"{self.endpoint('compute')}/servers/{server_id}",
                                    headers=self._headers())
        self._check(response, 204)

    def wait_for_server(self, server_id: str, *, timeout: float = 60.0, interval: float = 0.05,
                        on_change: Callable[[dict], None] | None = None) -> dict:
        """Poll until ACTIVE or ERROR; ``on_change`` sees each new (status, task) pair."""
        deadline = time.monotonic() + timeout
        seen = None
        while True:
            server = self.get_server(server_id)
            state = (server["status"], server.get("OS-EXT-STS:task_state"))
            if state != seen:
                seen = state
                if on_change:
                    on_change(server)
            if server["status"] in FINAL_STATUSES:
                return server
            if time.monotonic() > deadline:
                raise TimeoutError(f"server {server_id} still {server['status']} "
                                   f"after {timeout:.0f} s")
            time.sleep(interval)
            interval = min(interval * 1.5, 0.5)
