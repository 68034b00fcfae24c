"""Is a service up? The checks ``novalab up`` waits on and ``novalab status`` shows.

Three kinds of evidence, from weakest to strongest:

* the process is alive (and is a ``novalab service``: pids get reused);
* it wrote its *ready file* after its builder returned (its RPC consumers and
  HTTP server are running): all an RPC-only service such as nova-conductor can
  show without a request of ours going through it;
* what the service itself shows the world: an API answers its version document
  (``GET /``), and a service that heartbeats into Nova's ``services`` table
  (nova-compute) is *up* in the servicegroup sense: ``last_seen_up`` no older
  than ``service_down_time`` (60 s), as ``openstack compute service list`` shows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import select

from novalab.reference.common.db import Database, utcnow

# Health probes identify themselves, so trace tools can tell them from user requests.
HEALTH_USER_AGENT = "novalab-health/1"
SERVICE_DOWN_TIME = 60.0  # nova.conf [DEFAULT] service_down_time


def alive(pid: int | None) -> bool:
    """The process exists and is not a zombie (an exited child nobody reaped yet)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def is_service_process(pid: int, unit_id: str) -> bool:
    """``pid`` runs ``novalab ... service`` for ``unit_id`` (guards against pid reuse)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return alive(pid)  # no procfs: the pid file is all we have
    words = [a.decode(errors="replace") for a in argv]
    if "service" not in words:
        return False
    name = words[words.index("service") + 1] if words.index("service") + 1 < len(words) else ""
    host = words[words.index("--host") + 1] if "--host" in words else None
    return (f"{name}-{host}" if host else name) == unit_id


@dataclass
class Health:
    ok: bool
    detail: str


def http_version_doc(url: str, timeout: float = 2.0) -> Health:
    """An API is up when its WSGI app answers ``GET /`` at all (any status below 500).

    The APIs answer their version document there (200, or 300 Multiple Choices);
    the metadata proxy answers 4xx to a request that comes from no instance. A
    status below 500 proves the app is serving; a refused connection or a 5xx
    does not.
    """
    try:
        response = httpx.get(f"{url.rstrip('/')}/", timeout=timeout,
                             headers={"User-Agent": HEALTH_USER_AGENT,
                                      "Accept": "application/json"})
    except httpx.HTTPError as exc:
        return Health(False, f"{url}: {type(exc).__name__}")
    return Health(response.status_code < 500, f"{url} HTTP {response.status_code}")


class Heartbeats:
    """Reads Nova's ``services`` table: one row per (host, binary) that reports state."""

    def __init__(self, db_url: str):
        self.db = Database(db_url)

    def check(self, binary: str, host: str) -> Health | None:
        """None when this service keeps no row (it does not heartbeat)."""
        from novalab.reference.nova.db.models import Service

        with self.db.session() as session:
            row = session.execute(select(Service.last_seen_up, Service.forced_down).where(
                Service.binary == binary, Service.host == host,
                Service.deleted == 0)).first()
        if row is None:
            return None
        if row.last_seen_up is None or row.forced_down:
            return Health(False, "no heartbeat yet" if not row.forced_down else "forced down")
        age = utcnow() - row.last_seen_up
        up = age <= timedelta(seconds=SERVICE_DOWN_TIME)
        return Health(up, f"heartbeat {age.total_seconds():.0f} s ago")

    def close(self) -> None:
        self.db.dispose()
