"""``keystonemiddleware.auth_token`` in small: every service checks the caller's token.

Before a request reaches nova-api, glance or cinder, the middleware asks Keystone
``GET /v3/auth/tokens`` (authenticating as the service's own user) whether the
``X-Auth-Token`` is valid, and turns the answer into a :class:`RequestContext`.
Like keystonemiddleware without memcache, validated tokens are cached in process
(``token_cache_time``), so a client polling a server costs one validation per
cache period, not one per poll. Upstream caches for 300 s; novalab for 10 s, so
that a teacher who disables a learner (or a project) sees its tokens refused by
every service within seconds, not minutes: keystone itself refuses them at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
from flask import Flask, g, request

from novalab.reference.common import exception
from novalab.reference.common.context import RequestContext
from novalab.reference.common.wsgi import keystone_fault

TOKEN_CACHE_TIME = 10.0
_CACHE_SIZE = 1000


class ServiceCredentials:
    """A service user's password credentials, scoped to the ``service`` project.

    ``password`` may be a function: the deployment's current password, asked each
    time the service logs in, so a rotated one is picked up while it runs (upstream
    reads ``[keystone_authtoken] password`` at start and needs a restart).
    """

    def __init__(self, identity_url: str, username: str, password: str | Callable[[], str],
                 project: str = "service"):
        self.identity_url = identity_url.rstrip("/")
        self.username = username
        self.project = project
        self._password = password

    @property
    def password(self) -> str:
        return self._password() if callable(self._password) else self._password

    def body(self, password: str) -> dict:
        return {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": self.username, "domain": {"id": "default"}, "password": password}}},
            "scope": {"project": {"name": self.project, "domain": {"id": "default"}}}}}


class AuthProtocol:
    """Validate user tokens with Keystone on behalf of one service."""

    def __init__(self, credentials: ServiceCredentials, http: httpx.Client,
                 cache_time: float = TOKEN_CACHE_TIME):
        self.credentials = credentials
        self.http = http
        self.cache_time = cache_time
        self._cache: OrderedDict[str, tuple[float, dict]] = OrderedDict()
        self._service_token: tuple[str, float, str] | None = None  # token, expiry, password
        self._lock = threading.Lock()

    # The service's own token ------------------------------------------------------------

    def service_token(self, refresh: bool = False) -> str:
        """The service user's token, asked for again when it nears expiry, when
        ``refresh`` says a call was refused with it, or when the deployment's password
        changed (`novalab credentials rotate`: keystone revoked the tokens issued
        under the old one)."""
        password = self.credentials.password
        with self._lock:
            cached = self._service_token
            if cached and not refresh and cached[1] > time.time() and cached[2] == password:
                return cached[0]
        url = f"{self.credentials.identity_url}/v3/auth/tokens"
        response = self.http.post(url, json=self.credentials.body(password))
        if response.status_code != 201:
            raise exception.NotAuthorized(
                f"Service authentication failed ({response.status_code}): {response.text[:200]}")
        expires = _parse_time(response.json()["token"]["expires_at"]) - 60
        token = response.headers["X-Subject-Token"]
        with self._lock:
            self._service_token = (token, expires, password)
        return token

    # User tokens ------------------------------------------------------------------------

    def validate(self, user_token: str) -> dict:
        """The token body Keystone returns for ``user_token``; NotAuthorized if invalid."""
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(user_token)
            if cached and cached[0] > now:
                self._cache.move_to_end(user_token)
                return cached[1]
        body = self._fetch(user_token)
        expires = _parse_time(body["expires_at"]) - time.time()
        with self._lock:
            self._cache[user_token] = (now + min(self.cache_time, expires), body)
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return body

    def _fetch(self, user_token: str) -> dict:
        url = f"{self.credentials.identity_url}/v3/auth/tokens"
        for attempt in range(2):
            headers = {"X-Auth-Token": self.service_token(refresh=attempt > 0),
                       "X-Subject-Token": user_token}
            try:
                response = self.http.get(url, headers=headers, params={"nocatalog": "1"})
            except httpx.HTTPError as exc:
                raise exception.NovaLabException(
                    f"Identity service unreachable at {url}: {exc}") from exc
            if response.status_code == 200:
                return response.json()["token"]
            if response.status_code == 404:
                break
            if response.status_code not in (401, 403):
                raise exception.NovaLabException(
                    f"Token validation failed: {response.status_code} {response.text[:200]}")
        raise exception.NotAuthorized()

    def context_for(self, user_token: str) -> RequestContext:
        token = self.validate(user_token)
        project = token.get("project") or {}
        return RequestContext(
            user_id=token["user"]["id"], user_name=token["user"]["name"],
            project_id=project.get("id"), project_name=project.get("name"),
            roles=[r["name"] for r in token.get("roles", [])], auth_token=user_token)

    # Flask wiring -----------------------------------------------------------------------

    def install(self, app: Flask, public_paths: tuple[str, ...] = ()) -> None:
        """Require a valid token on every request except the version documents."""

        @app.before_request
        def _authenticate():
            if request.path.rstrip("/") in public_paths or request.path == "/":
                return None
            token = request.headers.get("X-Auth-Token")
            if not token:
                return self._unauthorized()
            try:
                g.context = self.context_for(token)
            except exception.NotAuthorized:
                return self._unauthorized()
            # The API's own request id, and the caller's if it sent one (a service
            # calling another, as nova-compute calls neutron): oslo.context's pair.
            g.context.request_id = g.get("request_id", g.context.request_id)
            g.context.global_request_id = g.get("global_request_id")
            return None

    def _unauthorized(self):
        response = keystone_fault(401, "The request you have made requires authentication.")
        response.headers["WWW-Authenticate"] = f'Keystone uri="{self.credentials.identity_url}"'
        return response


def _parse_time(value: str) -> float:
    """Seconds since the epoch of Keystone's ``2026-01-01T00:00:00.000000Z`` timestamps."""
    parsed = datetime.strptime(value.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
    return parsed.replace(tzinfo=UTC).timestamp()
