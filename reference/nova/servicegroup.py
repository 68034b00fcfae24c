"""Is a service up? (``nova/servicegroup``: the API and its DB driver).

Every nova service but the APIs has a ``services`` row and *reports state*:
each ``report_interval`` (10 s) it bumps the row's ``report_count`` and
``last_seen_up`` (``DbDriver._report_state``). A service is **up** when its
last report is no older than ``service_down_time`` (60 s) and nobody forced
it down (``os-services`` ``forced_down``): what the scheduler's ComputeFilter,
``openstack compute service list``, ``hypervisor list`` and ``availability
zone list --long`` all ask.

nova-compute reports through the conductor (it has no database);
nova-scheduler and nova-conductor write their own row (:class:`Heartbeat`).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from novalab.reference.common import exception
from novalab.reference.common.db import Database, utcnow
from novalab.reference.nova.db import api as db_api

LOG = logging.getLogger(__name__)

SERVICE_DOWN_TIME = timedelta(seconds=60)  # nova.conf [DEFAULT] service_down_time


def service_is_up(service: dict, now: datetime | None = None) -> bool:
    """``API.service_is_up`` (the DB driver's ``is_up``): not forced down, and a
    heartbeat within ``service_down_time``."""
    if service.get("forced_down"):
        return False
    last = service.get("last_seen_up") or service.get("created_at")
    return last is not None and abs((now or utcnow()) - last) <= SERVICE_DOWN_TIME


def get_updated_time(service: dict) -> datetime | None:
    """``API.get_updated_time``: what ``updated_at`` the service list shows (the DB
    driver's: the row's own, which every heartbeat bumps)."""
    return service.get("updated_at")


class Heartbeat:
    """A service that writes its own ``services`` row: created (or found) at start,
    then one report every ``report_interval`` seconds until :meth:`stop`."""

    def __init__(self, db: Database, host: str, binary: str, topic: str,
                 report_interval: float):
        self.db = db
        self.report_interval = report_interval
        self.service = db_api.service_create_or_get(db, host, binary, topic)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"{host}-{binary}-heartbeat",
                                        daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def report_state(self) -> None:
        """``DbDriver._report_state``."""
        try:
            self.service = db_api.service_report(self.db, self.service["id"])
        except exception.ServiceNotFound:
            # Deleted through os-services while running: say so once per beat, as upstream.
            LOG.error("The services table record for the %s service on host %s is gone. "
                      "Restart the service to recreate it.", self.service["binary"],
                      self.service["host"])

    def _loop(self) -> None:
        while not self._stop.wait(self.report_interval):
            try:
                self.report_state()
            except Exception:  # keep beating; the next report may get through
                LOG.exception("%s: heartbeat failed", self.service["binary"])

    def stop(self) -> None:
        self._stop.set()
