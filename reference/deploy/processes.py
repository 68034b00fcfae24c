"""One OS process per service: ``novalab service`` runs one, ``novalab up`` runs them all.

This is the deployment DevStack makes, in small: every service of
``services.all_builders()`` (OpenStack's, then novalab's own lab service) is its
own process (``python -m novalab.labs.cli service NAME``), with its own tracer
provider and trace file, and the processes meet only where OpenStack services
meet: HTTP on the standard loopback ports, RabbitMQ and one SQL server. A
service is built by the very builder the embedded cloud calls, so both
deployments run the same code.

What ``up`` derives from the registry, so services added later need no change
here: the start order (``BUILDERS`` order, each started once the one before is
healthy); which services run once per compute host (a builder whose ``host``
parameter has no default: ``nova-compute`` on compute-1..N); which ports and RPC
topics each one serves (recorded by the service in its ready file); the
catalog (``services.register_endpoints`` with the URLs actually served, once
everything is healthy, so keystone never advertises an endpoint nobody serves).
The cloud's *topology* (``up --topology classic|modern``) decides which services
run (placement only in the modern one: ``services.runs_in``) and reaches every
process as ``$NOVALAB_TOPOLOGY``, so each builds its ``CloudConfig`` with it, as
it does with the broker and database URLs; ``state.json`` keeps it, so ``status``
shows it and a second ``up`` cannot quietly mix two topologies in one cloud.
One more unit, started last, is no OpenStack service: ``novalab-web``, the
trace page (``novalab web``) over the deployment's trace store, on
http://127.0.0.1:8700 (``--web-port``), so ``status`` and ``down`` see it too.

What ``status`` tells beyond up or down: how a unit that is not running ended
(a service writes ``run/<unit>.exit`` when it stops or fails; a unit that left
none was killed, by SIGKILL or the OOM killer, or crashed) and when its log was
last written; that ``up`` restarted a unit, and how the one before it ended
(``run/<unit>.restarted``); and the newest warning or error in each unit's log
since it started, with the exception that caused it (a broker that went away,
a database that refused, an OTLP endpoint that stopped answering).

Left out: restart policies (a crashed service stays down until the next ``up``,
which starts what is not running), log rotation, and running as separate users.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from novalab.reference.common.credentials import PERSONA_PASSWORD, Credentials
from novalab.reference.common.wiring import STANDARD_PORTS, CloudConfig, Wiring
from novalab.reference.deploy import health, migrations, own_units, preflight, seed, services
from novalab.reference.deploy.statedir import (  # noqa: F401 (re-exported)
    DEFAULT_BIND,
    DEFAULT_DB,
    DEFAULT_TRANSPORT,
    ENV_ADVERTISE,
    ENV_BIND,
    ENV_DB,
    ENV_TOPOLOGY,
    ENV_TRANSPORT,
    TOPOLOGIES,
    StateDir,
    StateDirLock,
    Unit,
    read_json,
    write_json,
)

LOG = logging.getLogger(__name__)

# Each unit is started through the command line, which composes the product (labs/units.py).
SERVICE_MODULE = "novalab.labs.cli"
WEB_UNIT = "novalab-web"  # the trace page: a unit of the deployment, not a service
WEB_PORT = 8700
ENV_WEB_PORT = "NOVALAB_WEB_PORT"
# "1": the trace page asks no login on loopback (`up --no-web-auth`).
ENV_WEB_NO_AUTH = "NOVALAB_WEB_NO_AUTH"
START_TIMEOUT = 60.0
STOP_GRACE = 10.0
# [DEFAULT] vif_plugging_timeout of every nova-compute, through the environment.
ENV_VIF_PLUGGING_TIMEOUT = "NOVALAB_VIF_PLUGGING_TIMEOUT"
VIF_PLUGGING_TIMEOUT = CloudConfig.vif_plugging_timeout
TOPOLOGY = CloudConfig.topology  # the default: classic, as the 58-step table


class DeployError(Exception):
    """A deployment step failed; the message says which and what the log said."""


# The plan ------------------------------------------------------------------------------


def per_host(name: str) -> bool:
    """A service that runs once per compute host: its builder *requires* a host."""
    parameter = inspect.signature(services.all_builders()[name]).parameters.get("host")
    return parameter is not None and parameter.default is inspect.Parameter.empty


def compute_hosts(computes: int) -> list[str]:
    return [f"compute-{index}" for index in range(1, computes + 1)]


def plan(computes: int, web: bool = True, topology: str = "classic") -> list[Unit]:
    """Every process of a whole cloud of ``topology``, in start order; the trace page last."""
    units = []
    for name in services.all_builders():
        if not services.runs_in(name, topology):
            continue
        if per_host(name):
            units.extend(Unit(name, host) for host in compute_hosts(computes))
        else:
            units.append(Unit(name))
    if web:
        units.append(Unit(WEB_UNIT))
    return units


def running_urls(state: StateDir) -> dict[str, str]:
    """The URLs served by the live services of this deployment, from their ready files.

    Builders read ``w.urls`` both to reach a service and to learn whether it is
    deployed at all (glance stores images in rgw only ``if "ceph-rgw" in
    w.urls``). In the embedded cloud a builder sees the URLs of the services
    built before it; started in registry order, each process sees the same.
    """
    urls: dict[str, str] = {}
    for path in sorted((state.root / "run").glob("*.ready")):
        ready = read_json(path) or {}
        if health.alive(ready.get("pid")):
            urls.update(ready.get("urls", {}))
    return urls


# keystone catalog type -> (Wiring.urls key, what register_endpoints appended to the URL)
_CATALOG_KEYS = {"identity": ("keystone", "/v3"), "compute": ("nova", "/v2.1"),
                 "network": ("neutron", ""), "image": ("glance", ""),
                 "placement": ("placement", ""), "volumev3": ("cinder", "/v3/"),
                 "object-store": ("ceph-rgw", "/swift/v1"), "lab": ("labs", "/v1")}


def catalog_urls(db_url: str) -> dict[str, str]:
    """The URLs keystone's catalog advertises, keyed as ``Wiring.urls`` is.

    How a service on a host without the controller's state directory (a compute
    host) finds the controller's APIs: as a real nova-compute looks them up in the
    catalog, here straight from the database it is given (``--urls-from catalog``).
    The catalog holds what `up` registered once every API answered, at the
    addresses the controller advertised (``--advertise-address``).
    """
    from opentelemetry.trace import NoOpTracer

    from novalab.reference.common.db import Database
    from novalab.reference.keystone.core import Keystone

    db = Database(db_url)
    try:
        catalog = Keystone(db, NoOpTracer()).catalog()
    finally:
        db.dispose()
    urls = {}
    for entry in catalog:
        key, suffix = _CATALOG_KEYS.get(entry["type"], (None, ""))
        public = [e["url"] for e in entry["endpoints"] if e["interface"] == "public"]
        if key and public:
            url = public[0]
            urls[key] = url[:-len(suffix)] if suffix and url.endswith(suffix) else url
    return urls


def advertised(bind_address: str, advertise_address: str | None) -> str:
    """The address to put in URLs: ``advertise_address``, else the bind address,
    which must then be one others can reach (not 0.0.0.0 or ::)."""
    if advertise_address:
        return advertise_address
    if bind_address in ("0.0.0.0", "::", ""):
        raise DeployError(f"--bind-address {bind_address or '(any)'} listens on every "
                          "address: give --advertise-address (the one other hosts reach "
                          f"this host at; env {ENV_ADVERTISE})")
    return bind_address


# One service in the foreground -----------------------------------------------------------


def run_service(name: str, host: str | None, *, transport_url: str, db_url: str,
                state_dir: str | os.PathLike, stop: threading.Event | None = None,
                on_ready: Callable[[dict], None] | None = None,
                vif_plugging_timeout: float = VIF_PLUGGING_TIMEOUT,
                topology: str = TOPOLOGY, bind_address: str = DEFAULT_BIND,
                advertise_address: str | None = None,
                urls_from: str = "state-dir", after: Sequence[str] = ()) -> None:
    """Build service ``name`` and serve until ``stop`` is set (or SIGTERM/SIGINT).

    The service listens on its standard port and finds the others through
    :func:`running_urls`, learning those started after it as they come up. Spans
    go to ``traces/<unit>.jsonl`` in the state directory, and over OTLP when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set. Its fault knobs are the state
    directory's ``faults.json`` (``novalab fault``), as for every process of the cloud.
    ``topology`` is the cloud's (``CloudConfig.topology``): every process of one
    cloud must be given the same. It listens on ``bind_address`` and puts
    ``advertise_address`` (default: the bind address) in the URLs it publishes,
    which `up` registers in the catalog; ``urls_from="catalog"`` finds the other
    services in keystone's catalog instead of the state directory (docs/multihost.md).
    ``after`` names units (``keystone``, ``nova-compute-compute-1``) whose ready files
    must be there before this one builds: `up` starts every process at once so their
    imports overlap, and each still builds in the cloud's order.
    """
    advertise = advertised(bind_address, advertise_address)
    builder = None if name == WEB_UNIT else _builder(name, host, topology)
    stop = stop or _stop_on_signals()
    if after and not _await_units(StateDir(state_dir).make(), after, stop):
        return
    if builder is None:
        return run_web_page(state_dir, stop=stop, on_ready=on_ready, host=bind_address,
                            advertise=advertise)
    state = StateDir(state_dir).make()
    unit = Unit(name, host)
    with _exit_recorded(state, unit, stop):
        _serve(name, host, builder, state, unit, stop, transport_url=transport_url,
               db_url=db_url, on_ready=on_ready, vif_plugging_timeout=vif_plugging_timeout,
               topology=topology, bind_address=bind_address, advertise=advertise,
               urls_from=urls_from)


def _builder(name: str, host: str | None, topology: str):
    """The registry's builder of ``name``, or DeployError saying what is wrong."""
    builders = services.all_builders()
    if name not in builders:
        raise DeployError(f"no service {name!r}; known: {', '.join(builders)}")
    if topology not in TOPOLOGIES:
        raise DeployError(f"no topology {topology!r}; known: {', '.join(TOPOLOGIES)}")
    if not services.runs_in(name, topology):
        where = next(t for t in TOPOLOGIES if services.runs_in(name, t))
        raise DeployError(f"{name} is no part of a {topology} cloud (--topology {where}, "
                          f"or ${ENV_TOPOLOGY}={where})")
    builder = builders[name]
    if per_host(name) and not host:
        raise DeployError(f"{name} runs once per compute host: give --host (e.g. compute-1)")
    if host and "host" not in inspect.signature(builder).parameters:
        raise DeployError(f"{name} takes no --host")
    return builder


def _await_units(state: StateDir, unit_ids: Sequence[str], stop: threading.Event) -> bool:
    """Wait until each of ``unit_ids`` has written its ready file (with a live pid);
    False if ``stop`` came first. `up` stops everything if one of them fails."""
    waiting = list(unit_ids)
    told = 0.0
    while waiting:
        ready = read_json(state.root / "run" / f"{waiting[0]}.ready") or {}
        if health.alive(ready.get("pid")):
            waiting.pop(0)
            continue
        if time.monotonic() - told > 30:
            LOG.info("waiting for %s to be ready before building", ", ".join(waiting))
            told = time.monotonic()
        if stop.wait(0.1):
            return False
    return True


def _serve(name, host, builder, state: StateDir, unit: Unit, stop: threading.Event, *,
           transport_url, db_url, on_ready, vif_plugging_timeout, topology,
           bind_address, advertise, urls_from) -> None:
    from novalab.tracing.setup import Telemetry

    lock = StateDirLock(state.root, shared=True).acquire()  # one cloud: `up`'s processes
    # host.name: the compute host a per-host service stands for, else this machine's
    # name; host.ip: the address the other hosts reach it at.
    telemetry = Telemetry(file_path=state.trace_file(unit.id), otlp=True,
                          host_ip=[advertise])
    config = CloudConfig(state_dir=state.root, db_url=db_url, transport_url=transport_url,
                         ports=dict(STANDARD_PORTS), deployment="up",
                         vif_plugging_timeout=vif_plugging_timeout, topology=topology,
                         bind_host=bind_address, advertise_host=advertise)
    wiring = Wiring(config, telemetry)
    if urls_from == "catalog":
        wiring.urls.update(catalog_urls(db_url))
    wiring.urls.update(running_urls(state))
    threading.Thread(target=_learn_urls, args=(wiring.urls, state, stop), daemon=True,
                     name="learn-urls").start()
    try:
        before = dict(wiring.urls)
        builder(wiring, host) if host else builder(wiring)
        # What it published for the others (ceph-mon's msgr address is no HTTP URL)
        # and what it serves over HTTP (probed for a version document).
        published = {k: v for k, v in wiring.urls.items() if before.get(k) != v}
        ready = {"pid": os.getpid(), "unit": unit.id, "name": name, "host": host,
                 "controller": services.CONTROLLER, "urls": published,
                 "http": wiring.served, "topics": wiring.topics, "topology": topology,
                 "started_at": _now()}
        write_json(state.ready_file(unit), ready)
        LOG.info("%s ready: %s", unit.id, ready)
        if on_ready:
            on_ready(ready)
        stop.wait()
        LOG.info("%s stopping", unit.id)
    finally:
        state.ready_file(unit).unlink(missing_ok=True)
        wiring.close()
        telemetry.shutdown()
        lock.release()


def run_web_page(state_dir: str | os.PathLike, *, port: int | None = None,
                 stop: threading.Event | None = None,
                 on_ready: Callable[[dict], None] | None = None,
                 host: str = DEFAULT_BIND, advertise: str | None = None) -> None:
    """The trace page over this deployment's trace store, until ``stop`` (or a signal).

    Run as ``novalab service novalab-web`` so that it is a unit like the others:
    a pid file, a ready file whose ``http`` URL ``status`` probes, stopped by
    ``down``. The port comes from ``$NOVALAB_WEB_PORT`` (``up --web-port``). It asks
    for a login to the deployment's keystone, even on loopback (every local user
    reaches it), unless ``$NOVALAB_WEB_NO_AUTH`` is 1 (``up --no-web-auth``).
    """
    if own_units.trace_page is None:
        raise DeployError("no trace page was handed to the deployment: novalab's command "
                          "line does it (labs/units.py)")
    state = StateDir(state_dir).make()
    unit = Unit(WEB_UNIT)
    port = int(os.environ.get(ENV_WEB_PORT, WEB_PORT)) if port is None else port
    stop = stop or _stop_on_signals()
    with _exit_recorded(state, unit, stop):
        try:
            # The page asks for a keystone token: keystone is up already (the page
            # starts last), state.json names it only once `up` is done.
            keystone = running_urls(state).get("keystone")
            server = own_units.trace_page(
                state.root, host, port, require_auth=os.environ.get(ENV_WEB_NO_AUTH) != "1",
                auth_url=f"{keystone}/v3" if keystone else None)
        except OSError as exc:
            raise DeployError(f"{exc} (`novalab up --web-port PORT` picks another port; 0: "
                              "no trace page)") from exc
        try:
            ready = {"pid": os.getpid(), "unit": unit.id, "name": WEB_UNIT, "host": None,
                     "controller": services.CONTROLLER, "urls": {},
                     "http": {"web": f"http://{advertise or host}:{server.port}"},
                     "topics": [], "started_at": _now()}
            write_json(state.ready_file(unit), ready)
            if on_ready:
                on_ready(ready)
            stop.wait()
        finally:
            state.ready_file(unit).unlink(missing_ok=True)
            server.stop()


def _learn_urls(urls: dict[str, str], state: StateDir, stop: threading.Event) -> None:
    """Add the URLs of services that come up later, as the embedded cloud's shared
    ``w.urls`` gains them: neutron-server, started before nova-api, finds nova's URL
    when it needs to send ``network-vif-plugged``. Never overwrites a known key."""
    while not stop.wait(0.2):
        try:
            for key, url in running_urls(state).items():
                urls.setdefault(key, url)
        except OSError:  # the state directory is being removed: we are stopping anyway
            pass


def _stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT; ``event.signal`` names the one that came."""
    stop = threading.Event()
    stop.signal = None

    def handler(signum, _frame):
        stop.signal = signal.Signals(signum).name
        # Not stop.set() itself: the handler runs in the main thread, which may hold
        # the event's lock inside stop.wait(); setting it from a new thread cannot
        # deadlock.
        threading.Thread(target=stop.set).start()

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, handler)
    return stop


@contextlib.contextmanager
def _exit_recorded(state: StateDir, unit: Unit, stop: threading.Event):
    """Write ``run/<unit>.exit`` however the service ends, if it lives to see it:
    stopped by a signal, or failed with an exception. A SIGKILL leaves none, and
    that absence is what tells ``status`` the unit was killed or crashed."""
    try:
        yield
    except BaseException as exc:
        how = f"failed: {type(exc).__name__}: {exc}".strip().rstrip(":")
        _write_exit(state, unit, how[:300])
        raise
    by = getattr(stop, "signal", None)
    _write_exit(state, unit, f"stopped by {by}" if by else "stopped")


def _write_exit(state: StateDir, unit: Unit, how: str) -> None:
    with contextlib.suppress(OSError):  # the state directory may be going away
        write_json(exit_file(state, unit), {"pid": os.getpid(), "how": how, "at": _now()})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# The whole cloud -------------------------------------------------------------------------


@dataclass
class UpOptions:
    computes: int = 1
    transport_url: str = DEFAULT_TRANSPORT
    db_url: str = DEFAULT_DB
    otlp: str | None = None
    state_dir: str | os.PathLike = ".novalab-up"
    timeout: float = START_TIMEOUT
    web_port: int = WEB_PORT  # the trace page on 127.0.0.1; 0: none
    web_no_auth: bool = False  # the trace page asks no login (a machine of one user)
    # nova-compute's; None: what the running deployment uses, else the default
    vif_plugging_timeout: float | None = None
    # TOPOLOGIES; None: the running deployment's, else classic
    topology: str | None = None
    # where every service listens, and the address it advertises (None: the bind one)
    bind_address: str = DEFAULT_BIND
    advertise_address: str | None = None


@dataclass
class UnitStatus:
    unit: Unit
    pid: int | None
    running: bool
    health: health.Health
    log: Path
    urls: dict = field(default_factory=dict)
    # "topic.server" of each RPC server the unit runs (its ready file's; Neutron's too)
    topics: list[str] = field(default_factory=list)
    # What happened to it: how it ended, or that `up` restarted it; its newest warning.
    notes: list[str] = field(default_factory=list)


def os_environment(state: dict) -> dict[str, str]:
    """The ``OS_*`` variables for the ``openstack`` CLI (DevStack's ``openrc demo demo``)."""
    return {"OS_AUTH_URL": f"{state['urls']['keystone']}/v3", "OS_USERNAME": "demo",
            "OS_PASSWORD": PERSONA_PASSWORD, "OS_PROJECT_NAME": "demo",
            "OS_USER_DOMAIN_ID": "default", "OS_PROJECT_DOMAIN_ID": "default",
            "OS_IDENTITY_API_VERSION": "3", "OS_REGION_NAME": "RegionOne"}


def unit_health(unit: Unit, ready: dict | None, heartbeats: health.Heartbeats) -> health.Health:
    """What the service shows: its ready file, API version documents, heartbeat."""
    if ready is None:
        return health.Health(False, "not ready")
    checks = [health.http_version_doc(url) for url in ready.get("http", {}).values()]
    beat = heartbeats.check(unit.name, unit.host or ready.get("controller", ""))
    if beat is not None:
        checks.append(beat)
    if not checks:  # its topics are in the status table's own column
        return health.Health(True, "ready (RPC only)" if ready.get("topics") else "ready")
    return health.Health(all(c.ok for c in checks), "; ".join(c.detail for c in checks))


def _spawn(unit: Unit, state: StateDir, options: UpOptions,
           after: Sequence[str] = ()) -> subprocess.Popen:
    command = [sys.executable, "-m", SERVICE_MODULE, "service", unit.name,
               "--state-dir", str(state.root)]
    if unit.host:
        command += ["--host", unit.host]
    for unit_id in after:
        command += ["--after", unit_id]
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{ENV_TRANSPORT: options.transport_url,
                                                    ENV_DB: options.db_url})
    if options.otlp:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = options.otlp
    if options.vif_plugging_timeout is not None:
        env[ENV_VIF_PLUGGING_TIMEOUT] = f"{options.vif_plugging_timeout:g}"
    env[ENV_TOPOLOGY] = options.topology or TOPOLOGY
    env[ENV_BIND] = options.bind_address
    if options.advertise_address:
        env[ENV_ADVERTISE] = options.advertise_address
    else:
        env.pop(ENV_ADVERTISE, None)
    if unit.name == WEB_UNIT:
        env[ENV_WEB_PORT] = str(options.web_port)
        env[ENV_WEB_NO_AUTH] = "1" if options.web_no_auth else "0"
    state.ready_file(unit).unlink(missing_ok=True)
    with open(state.log(unit), "a") as log:
        log.write(f"--- {_now()} novalab up starts {unit.id}\n")
        log.flush()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    state.pid_file(unit).write_text(f"{process.pid}\n")
    return process


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join("    " + line for line in text[-lines:])


def _wait_healthy(unit: Unit, process: subprocess.Popen, state: StateDir,
                  heartbeats: health.Heartbeats, timeout: float) -> health.Health:
    deadline = time.monotonic() + timeout
    last = health.Health(False, "starting")
    while True:
        code = process.poll()
        if code is not None:
            raise DeployError(f"{unit.id} exited with status {code} while starting; "
                              f"{state.log(unit)} ends with:\n{_log_tail(state.log(unit))}")
        ready = state.ready(unit)
        if ready and ready.get("pid") == process.pid:
            last = unit_health(unit, ready, heartbeats)
            if last.ok:
                return last
        if time.monotonic() > deadline:
            raise DeployError(f"{unit.id} not healthy after {timeout:.0f} s ({last.detail}); "
                              f"{state.log(unit)} ends with:\n{_log_tail(state.log(unit))}")
        time.sleep(0.1)


def _running(state: StateDir, unit: Unit) -> int | None:
    pid = state.pid(unit)
    return pid if pid and health.alive(pid) and health.is_service_process(pid, unit.id) \
        else None


def up(options: UpOptions, echo: Callable[[str], None] = print) -> dict:
    """Start every service not already running; return the state written to state.json."""
    state = StateDir(options.state_dir).make()
    previous = state.load()
    if previous and any(_running(state, _unit(d)) for d in previous.get("units", [])):
        if options.otlp is None:  # a restart exports where the running services do
            options.otlp = previous.get("otlp")
        if options.vif_plugging_timeout is None:  # and waits as they do
            options.vif_plugging_timeout = previous.get("vif_plugging_timeout")
        if options.topology is None:  # and is wired as they are
            options.topology = previous.get("topology", TOPOLOGY)
        recorded = dict(previous, topology=previous.get("topology", TOPOLOGY))
        mismatched = [f"{key} ({recorded.get(key)} there, {getattr(options, key)} asked)"
                      if key == "topology" else key
                      for key in ("transport_url", "db_url", "computes", "topology")
                      if recorded.get(key) != getattr(options, key)]
        if mismatched:
            raise DeployError(f"a deployment already runs in {state.root} with other "
                              f"{', '.join(mismatched)}; run `novalab down` first")
    if options.vif_plugging_timeout is None:
        options.vif_plugging_timeout = VIF_PLUGGING_TIMEOUT
    if options.topology is None:
        options.topology = TOPOLOGY
    if options.topology not in TOPOLOGIES:
        raise DeployError(f"no topology {options.topology!r}; known: {', '.join(TOPOLOGIES)}")
    units = plan(options.computes, web=bool(options.web_port), topology=options.topology)
    running = {u.id: pid for u in units if (pid := _running(state, u))}
    preflight.check_broker(options.transport_url)
    created = preflight.ensure_database(options.db_url)
    if created:
        echo(f"created database {created!r}")
    before, after = migrations.upgrade(options.db_url)
    echo(f"schema at {after}" + (f" (was {before})" if before != after else ""))
    missing = migrations.unmigrated_tables(options.db_url)
    if missing:
        raise DeployError(f"no schema revision creates {', '.join(missing)}: a model was "
                          "added without an Alembic revision (docs/deployment.md, 'The "
                          "schema: Alembic')")
    record = {"version": 1, "state_dir": str(state.root), "computes": options.computes,
              "transport_url": options.transport_url, "db_url": options.db_url,
              "otlp": options.otlp,
              "vif_plugging_timeout": options.vif_plugging_timeout,
              "topology": options.topology, "bind_address": options.bind_address,
              "advertise_address": options.advertise_address,
              "started_at": _now(), "units": [u.to_dict() for u in units] + [
                  d for d in (previous or {}).get("units", [])
                  # so `down` still stops a unit this plan dropped (a host, placement)
                  # that still runs; a stopped one would only show as down in `status`
                  if _unit(d) not in units and _running(state, _unit(d))],
              "urls": (previous or {}).get("urls", {})}
    state.save(record)  # first, so `down` finds whatever gets started
    _announce_credentials(state.root, echo)
    started: list[Unit] = []
    heartbeats = health.Heartbeats(options.db_url)
    try:
        # Every process starts now, so that their imports (most of a start) overlap;
        # each builds only once the services before it are ready (``--after``), so
        # they come up one after the other as before, the hosts of a per-host
        # service together.
        spawned = []
        earlier: list[str] = []
        for name in dict.fromkeys(u.name for u in units):
            group = [u for u in units if u.name == name]
            for unit in group:
                if unit.id in running:
                    echo(f"{unit.id:<24} already running (pid {running[unit.id]})")
                    continue
                died = _died(state, unit, echo)
                process = _spawn(unit, state, options, after=earlier)
                _record_restart(state, unit, died, process.pid)
                spawned.append((unit, process))
                started.append(unit)
            earlier = earlier + [u.id for u in group]
        for unit, process in spawned:
            result = _wait_healthy(unit, process, state, heartbeats, options.timeout)
            echo(f"{unit.id:<24} up (pid {process.pid}): {result.detail}")
        served = {}
        for unit in units:
            served.update((state.ready(unit) or {}).get("urls", {}))
        page = (state.ready(Unit(WEB_UNIT)) or {}).get("http", {}).get("web")
        if page:  # the trace page, where learners read their traces (tracing/remote.py)
            served["web"] = page
        register_catalog(options.db_url, served)
    except BaseException:
        if started:
            echo(f"stopping what this run started: {', '.join(u.id for u in started)}")
            stop_units(state, list(reversed(started)), echo=echo)
        raise
    finally:
        heartbeats.close()
    record["urls"] = served
    record["web_url"] = (state.ready(Unit(WEB_UNIT)) or {}).get("http", {}).get("web")
    record["os_env"] = os_environment(record)
    state.save(record)
    _warn_shared_broker(state, units, options.transport_url, echo)
    return record


def _announce_credentials(state_dir: Path, echo: Callable[[str], None]) -> None:
    """Make the deployment's passwords before any service needs them; print the admin's
    the one time it is made (credentials.py)."""
    password = seed.first_credentials(Credentials.of(state_dir))
    if password:
        echo(seed.ADMIN_PASSWORD_NOTE.format(password=password, state_dir=state_dir))


def _warn_shared_broker(state: StateDir, units: list[Unit], transport_url: str,
                        echo: Callable[[str], None]) -> None:
    from novalab.reference.deploy.queues import expected_consumers, foreign_consumers

    topics = [t for unit in units for t in (state.ready(unit) or {}).get("topics", [])]
    try:
        shared = foreign_consumers(transport_url, expected_consumers(topics))
    except Exception as exc:  # only a warning: never fail a healthy cloud over it
        LOG.debug("could not count consumers: %s", exc)
        return
    if shared:
        listed = ", ".join(f"{q} ({n} consumers, {ours} ours)" for q, (n, ours) in shared.items())
        echo(f"warning: other consumers share this broker's queues: {listed}. Another cloud "
             "uses the same vhost and will take some of this cloud's messages; give each "
             "cloud its own vhost (amqp://.../VHOST, `rabbitmqctl add_vhost VHOST`).")


def register_catalog(db_url: str, served: dict[str, str]) -> None:
    """Register the APIs that answered in keystone's catalog (``keystone-manage bootstrap``
    and ``openstack endpoint create`` in a real deployment), straight through the
    keystone core on the database, as those tools do."""
    from opentelemetry.trace import NoOpTracer

    from novalab.reference.common.db import Database
    from novalab.reference.keystone.core import Keystone

    db = Database(db_url)
    try:
        services.register_endpoints(Keystone(db, NoOpTracer()), served)
    finally:
        db.dispose()


def _unit(data: dict) -> Unit:
    return Unit(data["name"], data.get("host"))


def status(state_dir: str | os.PathLike) -> list[UnitStatus]:
    state = StateDir(state_dir)
    record = state.load()
    if record is None:
        return []
    heartbeats = health.Heartbeats(record["db_url"])
    rows = []
    try:
        for unit in map(_unit, record["units"]):
            pid = state.pid(unit)
            running = _running(state, unit) is not None
            ready = state.ready(unit)
            notes = []
            if not running:
                ended = how_it_ended(state, unit, pid) if pid is not None else None
                result = health.Health(False, "stopped" if pid is None else ended.short)
                if ended is not None:
                    notes.append(ended.full)
            else:
                try:
                    result = unit_health(unit, ready if ready and ready.get("pid") == pid
                                         else None, heartbeats)
                except Exception as exc:  # the database itself may be the problem
                    result = health.Health(False, f"cannot check: {type(exc).__name__}")
                notes += filter(None, [restart_note(state, unit, pid),
                                       last_warning(state.log(unit))])
            rows.append(UnitStatus(unit, pid, running, result, state.log(unit),
                                   (ready or {}).get("urls", {}),
                                   list((ready or {}).get("topics", [])) if running else [],
                                   notes))
    finally:
        heartbeats.close()
    return rows


# What happened: how a unit ended, a restart, the newest warning ---------------------------


def exit_file(state: StateDir, unit: Unit) -> Path:
    """Written by the service as it exits (stopped, failed); never by a killed one."""
    return state.root / "run" / f"{unit.id}.exit"


def restart_file(state: StateDir, unit: Unit) -> Path:
    """Written by ``up`` when it starts a unit again whose process had died."""
    return state.root / "run" / f"{unit.id}.restarted"


@dataclass
class Ending:
    short: str   # for the table: "killed or crashed", "exited: failed: ..."
    full: str    # for the notes: the pid, how, when its log was last written, its last line


KILLED = ("ended without a clean stop: killed (SIGKILL, the OOM killer) or crashed")


def how_it_ended(state: StateDir, unit: Unit, pid: int) -> Ending:
    """What is known of how process ``pid`` of ``unit`` ended (it is not running).

    Nobody waits on the services (``up`` exits once they are healthy), so their
    exit status is lost; what is left is the exit file a service writes when it
    sees its end coming, and its log.
    """
    record = read_json(exit_file(state, unit)) or {}
    if record.get("pid") == pid:
        short, how = "exited", f"{record['how']} at {record['at']}"
    else:
        short, how = "killed or crashed", KILLED
    full = f"pid {pid} {how}"
    log = state.log(unit)
    with contextlib.suppress(OSError):
        written = datetime.fromtimestamp(log.stat().st_mtime, UTC)
        full += f"; log last written {written.isoformat(timespec='seconds')}"
        line = _last_line(log)
        if line:
            full += f": {line}"
    return Ending(short, full)


def restart_note(state: StateDir, unit: Unit, pid: int | None) -> str | None:
    """``restarted by `novalab up` at ...`` if ``up`` started ``pid`` after a death."""
    record = read_json(restart_file(state, unit)) or {}
    if pid is None or record.get("pid") != pid:
        return None
    return f"restarted by `novalab up` at {record['at']}; before: {record['before']}"


def _died(state: StateDir, unit: Unit, echo: Callable[[str], None]) -> Ending | None:
    """How the unit's last process ended, if it died (``up`` is about to start it):
    a pid file is left only by a process that ``down`` did not stop."""
    pid = state.pid(unit)
    if pid is None:
        return None
    ended = how_it_ended(state, unit, pid)
    echo(f"{unit.id:<24} was not running ({ended.short}, pid {pid}): starting it again")
    return ended


def _record_restart(state: StateDir, unit: Unit, died: Ending | None, new_pid: int) -> None:
    """Keep, for ``status``, that ``up`` started ``unit`` again and how the last one ended."""
    if died is None:  # a first start, or after `down`: no restart to tell
        restart_file(state, unit).unlink(missing_ok=True)
        return
    write_json(restart_file(state, unit), {"pid": new_pid, "at": _now(), "before": died.full})


# `service`'s log format: "2026-11-26 03:41:36,332 ERROR nova-compute@compute-1 logger: ..."
_RECORD = re.compile(r"^(?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.]\d+ "
                     r"(?P<level>[A-Z]+) (?:\S+ (?=\S+: ))?(?P<text>.*)$")
_CAUSE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Timeout|Failure)\b.*")
_TAIL_BYTES = 256 * 1024


def _log_lines(path: Path) -> list[str]:
    """The lines of this run of the unit (after `up`'s last start marker), at most
    the last ``_TAIL_BYTES`` of the log."""
    with open(path, "rb") as log:
        log.seek(max(0, log.seek(0, os.SEEK_END) - _TAIL_BYTES))
        lines = log.read().decode(errors="replace").splitlines()
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith("--- ") and "novalab up starts" in lines[index]:
            return lines[index + 1:]
    return lines


def _last_line(path: Path) -> str | None:
    lines = [line for line in _log_lines(path) if line.strip()]
    return lines[-1][:300] if lines else None


def last_warning(path: Path) -> str | None:
    """The newest WARNING, ERROR or CRITICAL record in this run's log, with the
    exception that caused it when a traceback follows (its last ``Name: message``
    line): ``2026-11-26 03:41:36 ERROR novalab.rpc: RPC cast create_volume on
    cinder-volume failed (sqlalchemy.exc.OperationalError: ...)``."""
    try:
        lines = _log_lines(path)
    except OSError:
        return None
    found, cause, ours = None, None, False
    for line in lines:
        record = _RECORD.match(line)
        if record:  # a traceback that follows belongs to this record
            ours = record["level"] in ("WARNING", "ERROR", "CRITICAL")
            if ours:  # the unit's name, which the row shows, left out
                found, cause = f"{record['when']} {record['level']} {record['text']}", None
        elif ours and _CAUSE.match(line):
            cause = line
    if found is None:
        return None
    text = found if cause is None else f"{found} ({cause.strip()})"
    return text if len(text) <= 400 else text[:397] + "..."


def _reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is our child (a zombie otherwise)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _stop_pid(pid: int, grace: float) -> str:
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not health.alive(pid):
            return "stopped"
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        _reap(pid)
        if not health.alive(pid):
            return f"killed (no exit within {grace:.0f} s of SIGTERM)"
        time.sleep(0.05)
    return "still running after SIGKILL"


def stop_units(state: StateDir, units: list[Unit], grace: float = STOP_GRACE,
               echo: Callable[[str], None] = print) -> list[str]:
    """SIGTERM each unit in turn, SIGKILL after ``grace``; returns the ids still alive."""
    left = []
    for unit in units:
        pid = state.pid(unit)
        if pid is None:
            continue
        if health.alive(pid) and health.is_service_process(pid, unit.id):
            outcome = _stop_pid(pid, grace)
            echo(f"{unit.id:<24} {outcome} (pid {pid})")
            if health.alive(pid):
                left.append(unit.id)
                continue
        state.pid_file(unit).unlink(missing_ok=True)
        state.ready_file(unit).unlink(missing_ok=True)
    return left


def down(state_dir: str | os.PathLike, grace: float = STOP_GRACE,
         echo: Callable[[str], None] = print) -> list[str]:
    """Stop every unit, last started first; then check no pid file names a live process."""
    state = StateDir(state_dir)
    record = state.load() or {}
    units = [_unit(d) for d in record.get("units", [])]
    left = stop_units(state, list(reversed(units)), grace, echo)
    # The proof: no pid file left names a live novalab service.
    for path in state.pid_files() if (state.root / "run").is_dir() else []:
        unit_id = path.name.removesuffix(".pid")
        try:
            pid = int(path.read_text().strip())
        except ValueError:
            pid = 0
        if health.alive(pid) and health.is_service_process(pid, unit_id):
            left.append(unit_id)
        else:
            path.unlink(missing_ok=True)
    if record:
        record["stopped_at"] = _now()
        state.save(record)
    return sorted(set(left))
