"""Soak: many boots at once, random faults, random deletes; then count what went wrong.

Each boot is the whole cast (a port and a 1 GB blank volume). Before a boot,
with probability ``--fault-rate``, one failure drill is injected to fire once
(wherever the next build reaches it: a port that cannot be bound, a lost
network-vif-plugged, a volume the backend fails, an image served wrong); with
probability ``--delete-rate`` the server is deleted at a random moment of its
build. At the end every server still there is deleted, and the cloud is read
back as an admin. What must be zero is printed, never asserted:

- boots lost: a 202 whose server neither ended ACTIVE, nor ERROR with a fault,
  nor went away when deleted;
- stuck: a server still BUILD (or deleting) at the deadline;
- ERROR without a fault;
- leaked: ports on no server, volumes, RBD images of volumes, libvirt domains;
- 5xx: any answer of 500 or more to any request the soak made.

``broker-unreachable`` is left out of the drills (nova-api answers it with a
deliberate 500) and ``compute-crash`` too (it kills the process: `novalab up`
only, see tests/reference/deploy/test_up_faults.py).

    .venv/bin/python benchmarks/soak.py [--boots 100] [--concurrency 8] [--seed 1]
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import libvirt

from novalab.reference.ceph import auth, rbd
from novalab.reference.ceph.rados import Rados
from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.common.faults import Faults
from novalab.reference.deploy.boot import BootRequest, server_extra
from novalab.reference.deploy.client import CloudClient
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.http import http_client
from novalab.tracing.setup import Telemetry

DRILLS = ("port-binding", "vif-plugged-timeout", "volume-error", "image-checksum")
SETTLED = ("ACTIVE", "ERROR")


@dataclass
class SoakReport:
    boots: int = 0
    accepted: int = 0
    outcomes: Counter = field(default_factory=Counter)  # ACTIVE / ERROR / deleted
    faults_injected: Counter = field(default_factory=Counter)
    error_causes: Counter = field(default_factory=Counter)  # fault messages, ids masked
    lost: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    error_without_fault: list[str] = field(default_factory=list)
    leaked: dict[str, list[str]] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)  # "METHOD path -> status"
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not (self.lost or self.stuck or self.error_without_fault or self.server_errors
                    or any(self.leaked.values()))


class _Recorder:
    """Counts every 5xx the soak's clients get (an httpx response hook)."""

    def __init__(self, report: SoakReport):
        self.report = report
        self.lock = threading.Lock()

    def __call__(self, response) -> None:
        if response.status_code >= 500:
            with self.lock:
                self.report.server_errors.append(
                    f"{response.request.method} {response.request.url.path} -> "
                    f"{response.status_code}")


def _masked(message: str) -> str:
    """A fault message with its ids replaced, so equal causes count together."""
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>",
                  message)[:160]


def start_cloud(workdir: Path, computes: int = 1, vif_timeout: float = 30.0) -> EmbeddedCloud:
    """A whole-cast embedded cloud; a lost vif-plugged costs ``vif_timeout``, not 300 s."""
    from boot_latency import lift_quotas  # benchmarks/ is the script's own directory

    config = CloudConfig(state_dir=workdir / "soak", libvirt_uri="test:///default",
                         network=True, computes=computes,
                         vif_plugging_timeout=vif_timeout)
    cloud = EmbeddedCloud(config, Telemetry(enabled=False, memory=False, otlp=False)).start()
    lift_quotas(cloud, "demo")
    return cloud


def run_soak(cloud: EmbeddedCloud, *, boots: int, concurrency: int, fault_rate: float,
             delete_rate: float, seed: int, deadline: float = 180.0,
             progress=None) -> SoakReport:
    """Boot ``boots`` servers on ``cloud`` as the module docstring says; the report."""
    rng = random.Random(seed)
    report = SoakReport(boots=boots)
    recorder = _Recorder(report)
    faults = Faults(cloud.config.state_dir)
    plans = [(rng.random() < fault_rate and rng.choice(DRILLS),
              rng.random() < delete_rate and rng.uniform(0.0, 3.0)) for _ in range(boots)]
    deleted: set[str] = set()
    created: list[str] = []
    lock = threading.Lock()
    started = time.perf_counter()

    with http_client() as http:
        http.event_hooks["response"] = [recorder]
        client = CloudClient(cloud.identity_url, http)
        client.authenticate("demo", PERSONA_PASSWORD, "demo")
        flavor = client.find_flavor("m1.nano")["id"]
        image = client.find_image("cirros")["id"]
        extra = server_extra(BootRequest(), image)
        compute = client.endpoint("compute")
        headers = {"X-Auth-Token": client.token}

        def one(index: int) -> None:
            drill, delete_after = plans[index]
            if drill:
                faults.inject(drill, once=True)
                with lock:
                    report.faults_injected[drill] += 1
            response = http.post(f"{compute}/servers", headers=headers, json={"server": {
                "name": f"soak-{index}", "flavorRef": flavor, "imageRef": image, **extra}})
            if response.status_code != 202:
                return
            server_id = response.json()["server"]["id"]
            with lock:
                created.append(server_id)
            if delete_after is not False:
                time.sleep(delete_after)
                if http.delete(f"{compute}/servers/{server_id}",
                               headers=headers).status_code == 204:
                    with lock:
                        deleted.add(server_id)
            if progress:
                progress(index)

        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, range(boots)))
        report.accepted = len(created)

        # Every server settles: ACTIVE, ERROR, or gone if it was deleted.
        end = time.monotonic() + deadline
        pending = set(created)
        last: dict[str, dict] = {}
        while pending and time.monotonic() < end:
            for server_id in list(pending):
                response = http.get(f"{compute}/servers/{server_id}", headers=headers)
                if response.status_code == 404:
                    pending.discard(server_id)
                    report.outcomes["deleted" if server_id in deleted else "vanished"] += 1
                    if server_id not in deleted:
                        report.lost.append(server_id)
                    continue
                server = last[server_id] = response.json()["server"]
                if server["status"] in SETTLED and server_id not in deleted:
                    pending.discard(server_id)
                    report.outcomes[server["status"]] += 1
                    if server["status"] == "ERROR" and not server.get("fault"):
                        report.error_without_fault.append(server_id)
                    elif server["status"] == "ERROR":
                        report.error_causes[_masked(server["fault"]["message"])] += 1
            time.sleep(0.2)
        report.stuck = [f"{s} {last.get(s, {}).get('status')}/"
                        f"{last.get(s, {}).get('OS-EXT-STS:task_state')}" for s in pending]

        # Delete what is left, wait until it is gone, then read the cloud back.
        survivors = [s for s in created if s not in deleted and s not in pending]
        for server_id in survivors:
            http.delete(f"{compute}/servers/{server_id}", headers=headers)
        end = time.monotonic() + deadline
        while survivors and time.monotonic() < end:
            survivors = [s for s in survivors if http.get(
                f"{compute}/servers/{s}", headers=headers).status_code != 404]
            time.sleep(0.2)
        report.stuck += [f"{s} not deleted" for s in survivors]
        cloud.wait_idle()
        # Cinder deletes asynchronously: what still goes away within the deadline is
        # not a leak.
        end = time.monotonic() + 60.0
        report.leaked = leftovers(cloud, http)
        while any(report.leaked.values()) and time.monotonic() < end:
            time.sleep(0.5)
            report.leaked = leftovers(cloud, http)
    report.seconds = time.perf_counter() - started
    return report


def leftovers(cloud: EmbeddedCloud, http) -> dict[str, list[str]]:
    """What is still allocated once every server is gone (read as admin)."""
    admin = CloudClient(cloud.identity_url, http)
    admin.authenticate("admin", cloud.config.credentials.admin, "admin")
    headers = {"X-Auth-Token": admin.token}
    ports = http.get(f"{admin.endpoint('network')}/v2.0/ports", headers=headers).json()["ports"]
    volumes = http.get(f"{admin.endpoint('volumev3')}/volumes/detail",
                       params={"all_tenants": 1}, headers=headers).json()["volumes"]
    servers = http.get(f"{admin.endpoint('compute')}/servers",
                       params={"all_tenants": 1}, headers=headers).json()["servers"]
    with Rados(cloud.urls["ceph-mon"], cloud.telemetry.tracer("soak", "soak"),
               auth=auth.of(cloud.config.state_dir)).connect() as rados:
        images = [name for name in rbd.RBD().list(rados.open_ioctx("volumes"))
                  if name.startswith("volume-")]
    # Nova names its domains instance-%08x; test:///default also holds its own "test".
    domains = [d.name() for d in libvirt.open(cloud.config.libvirt_uri).listAllDomains(0)
               if d.name().startswith("instance-")]
    return {"servers": [s["id"] for s in servers if s["name"].startswith("soak-")],
            "ports": [p["id"] for p in ports if p["device_owner"].startswith("compute:")],
            "volumes": [f"{v['id']} {v['status']}" for v in volumes],
            "rbd images": images,
            "libvirt domains": domains}


def print_report(report: SoakReport, args) -> None:
    rate = report.accepted / report.seconds if report.seconds else 0.0
    print(f"soak: {report.boots} boots (whole cast), concurrency {args.concurrency}, "
          f"fault rate {args.fault_rate}, delete rate {args.delete_rate}, seed {args.seed}")
    print(f"  accepted {report.accepted}, in {report.seconds:.1f} s ({rate:.2f} boots/s)")
    print(f"  outcomes: {dict(report.outcomes)}")
    print(f"  drills injected: {dict(report.faults_injected)}")
    for cause, count in report.error_causes.most_common(6):
        print(f"  ERROR x{count}: {cause}")
    rows = [("boots lost", report.lost), ("stuck in BUILD/deleting", report.stuck),
            ("ERROR without a fault", report.error_without_fault),
            ("5xx answers", report.server_errors)]
    rows += [(f"leaked {kind}", items) for kind, items in report.leaked.items()]
    for label, items in rows:
        shown = f"  {items[:5]}" if items else ""
        print(f"  {label:<26} {len(items):>4}  (target 0){shown}")
    print("  clean" if report.clean else "  NOT CLEAN")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boots", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--delete-rate", type=float, default=0.2)
    parser.add_argument("--computes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vif-timeout", type=float, default=30.0,
                        help="nova-compute's vif_plugging_timeout (a lost-event drill waits it)")
    parser.add_argument("--deadline", type=float, default=300.0,
                        help="seconds every phase may take before what is left counts as stuck")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="novalab-soak-") as tmp:
        cloud = start_cloud(Path(tmp), args.computes, args.vif_timeout)
        try:
            done = Counter()

            def progress(_index):
                done["n"] += 1
                if done["n"] % 10 == 0:
                    print(f"  ... {done['n']}/{args.boots} boots sent", flush=True)

            report = run_soak(cloud, boots=args.boots, concurrency=args.concurrency,
                              fault_rate=args.fault_rate, delete_rate=args.delete_rate,
                              seed=args.seed, deadline=args.deadline, progress=progress)
        finally:
            cloud.stop()
    print_report(report, args)


if __name__ == "__main__":
    main()
