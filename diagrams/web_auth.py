"""Who may see which trace, once the trace page is reachable by others.

``novalab web`` on loopback is the learner's own and asks nothing. Bound to any
other address (a classroom's lab network), or started by ``serve`` or ``up``
(a shared cloud), it asks for a keystone token, as every OpenStack API does: a
login form that posts to the deployment's keystone, or an ``X-Auth-Token``
header. Keystone validates the token (a token may validate
itself) and says whose it is.

Which traces a token sees is decided by the cloud itself: a trace is shown to
whoever may ``GET /servers/{id}`` of every server in it (Nova scopes that
lookup to the caller's project), and every trace to admins. A trace of
no server (``GET /v3``, a token validation) is admin's only: it may carry
anyone's request. Answers are cached as long as the services' auth middleware
caches a token (``token_cache_time``), so the page's one-second polls do not
become a stream of API calls, and a revoked or disabled token stops opening the
page when it stops working on the APIs.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from novalab.reference.common.auth_token import TOKEN_CACHE_TIME

COOKIE = "novalab_token"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def identity_url(state_dir: str | Path) -> str | None:
    """The keystone of the deployment in ``state_dir`` (``serve``'s cloud.json or
    ``up``'s state.json), as its ``OS_AUTH_URL``."""
    for name in ("cloud.json", "state.json"):
        try:
            data = json.loads((Path(state_dir) / name).read_text())
        except (OSError, ValueError):
            continue
        url = (data.get("os_env") or {}).get("OS_AUTH_URL")
        if url:
            return url
    return None


def same_site(target: str | None) -> str:
    """``target`` if it is a path on this site, else ``/`` (where ``/login?next=`` may
    send a browser that has just logged in).

    A browser drops tabs and newlines anywhere in a URL and reads ``\\`` as
    ``/``, so ``/<TAB>/evil.example`` is ``//evil.example`` to it: another site.
    Only a path that starts with one ``/`` and holds no control character or
    backslash is kept.
    """
    if (not target or not target.startswith("/") or target.startswith("//")
            or any(c < " " or c in "\\\x7f" for c in target)):
        return "/"
    return target


class AuthFailed(Exception):
    """Keystone refused the credentials or the token."""


@dataclass
class Viewer:
    """A validated token: whose it is, and where its project's Nova and lab service are."""

    token: str
    user: str
    project_id: str | None
    roles: list[str]
    compute_url: str | None
    expires: float = field(default=0.0)
    lab_url: str | None = None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


class KeystoneGate:
    """Log in, validate tokens and decide what each may see, against one keystone."""

    def __init__(self, auth_url: str, http: httpx.Client | None = None,
                 cache_time: float = TOKEN_CACHE_TIME):
        self.auth_url = auth_url.rstrip("/").removesuffix("/v3")
        self.http = http or httpx.Client(timeout=10)
        self.cache_time = cache_time   # the deployment's token_cache_time
        self._viewers: dict[str, Viewer] = {}
        self._servers: dict[tuple[str, str], tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def login(self, username: str, password: str, project: str) -> str:
        """A project-scoped token for the user (POST /v3/auth/tokens)."""
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": username, "domain": {"id": "default"}, "password": password}}},
            "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
        try:
            response = self.http.post(f"{self.auth_url}/v3/auth/tokens", json=body)
        except httpx.HTTPError as exc:
            raise AuthFailed(f"keystone at {self.auth_url} does not answer: {exc}") from exc
        if response.status_code != 201:
            raise AuthFailed("The user name, password or project is wrong.")
        return response.headers["X-Subject-Token"]

    def validate(self, token: str | None) -> Viewer:
        """The token's owner, from keystone (cached for a little while)."""
        if not token:
            raise AuthFailed("No token.")
        now = time.monotonic()
        with self._lock:
            viewer = self._viewers.get(token)
        if viewer and viewer.expires > now:
            return viewer
        try:
            response = self.http.get(f"{self.auth_url}/v3/auth/tokens",
                                     headers={"X-Auth-Token": token, "X-Subject-Token": token})
        except httpx.HTTPError as exc:
            raise AuthFailed(f"keystone at {self.auth_url} does not answer: {exc}") from exc
        if response.status_code != 200:
            raise AuthFailed("The token is not valid (any more).")
        body = response.json()["token"]
        viewer = Viewer(token, body["user"]["name"], (body.get("project") or {}).get("id"),
                        [r["name"] for r in body.get("roles", [])], _endpoint(body, "compute"),
                        expires=now + self.cache_time, lab_url=_endpoint(body, "lab"))
        with self._lock:
            self._viewers[token] = viewer
            if len(self._viewers) > 1000:
                self._viewers.pop(next(iter(self._viewers)))
        return viewer

    def may_see(self, viewer: Viewer, server_ids) -> bool:
        """Whether ``viewer`` may see a trace about these servers (none: admin only).

        Every one of them, not any: a trace that touched another project's server
        (a shared request, or a client that sent someone else's trace id) would
        otherwise show that project's spans to whoever owns one of its servers.
        """
        if viewer.is_admin:
            return True
        server_ids = list(server_ids)
        return bool(server_ids) and all(self._sees_server(viewer, server_id)
                                        for server_id in server_ids)

    def _sees_server(self, viewer: Viewer, server_id: str) -> bool:
        if not viewer.compute_url or not viewer.project_id:
            return False
        key = (viewer.token, server_id)
        now = time.monotonic()
        with self._lock:
            cached = self._servers.get(key)
        if cached and cached[0] > now:
            return cached[1]
        try:
            response = self.http.get(f"{viewer.compute_url}/servers/{server_id}",
                                     headers={"X-Auth-Token": viewer.token})
            allowed = response.status_code == 200
        except httpx.HTTPError:
            allowed = False
        with self._lock:
            self._servers[key] = (now + self.cache_time, allowed)
            if len(self._servers) > 10000:
                self._servers.pop(next(iter(self._servers)))
        return allowed


def _endpoint(token: dict, service_type: str) -> str | None:
    """The public endpoint of ``service_type`` in the token's catalog."""
    for service in token.get("catalog", []):
        if service.get("type") == service_type:
            for endpoint in service.get("endpoints", []):
                if endpoint.get("interface") == "public":
                    return endpoint["url"].rstrip("/")
    return None
