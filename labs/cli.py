"""The ``novalab`` command: boot a server and keep its trace, or run a cloud to explore.

    novalab boot                 one traced boot on an embedded cloud, trace and pictures
    novalab serve                the embedded cloud on the standard ports, for the openstack CLI
    novalab flow check TRACE     project a trace onto the classic 58-step flow
    novalab diagram TRACE        sequence diagrams and call graphs
    novalab export jaeger TRACE  a file Jaeger's UI can open
    novalab up / status / down   every service as its own process (RabbitMQ, a SQL server)
    novalab trace list           the traces of the running or last cloud, boots first
    novalab trace show|collect   one trace (by --server, --request-id, --trace-id, --latest)
    novalab web                  the trace page (serve and up host it on :8700)
    novalab lab ...              the course: labs graded from the learner's own trace
    novalab fault | scheduler    the failure drills' knobs; the scheduler's filters
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table
from rich.text import Text

from novalab.diagrams.check import steps_of
from novalab.diagrams.cli import register as register_diagrams
from novalab.labs import units
from novalab.labs.class_cli import register as register_class
from novalab.labs.lab_cli import register as register_labs
from novalab.reference.deploy.commands import register as register_deploy
from novalab.reference.deploy.commands import topology_option
from novalab.reference.deploy.credentials_cli import register as register_credentials
from novalab.reference.deploy.fault_cli import register as register_faults
from novalab.reference.deploy.scheduler_cli import register as register_scheduler
from novalab.tracing.cli import PLAIN
from novalab.tracing.cli import register as register_trace

console = Console(stderr=True, **PLAIN)

# The most compute hosts one embedded cloud runs (boot and serve --computes; `up`
# starts a process per host and keeps its own limit). Measured on 2 cores
# (docs/perf/scale.md): 100 hosts start in seconds and hold about 0.5 MB and 5
# threads each; 1,000 start in about a minute, hold 5,000 threads and spend about
# half a core on heartbeats alone (100 reports a second through the conductor and
# the database). Past that, a cloud in one process does little but report that
# its hosts are alive (docs/decisions.md).
MAX_COMPUTES = 1000

TRANSPORT_HELP = ("RPC transport: 'memory://' (in-process, default) or a RabbitMQ URL such as "
                  "amqp://guest:guest@127.0.0.1:5672/")
DB_HELP = ("SQLAlchemy database URL, e.g. postgresql+psycopg://user@127.0.0.1/nova or "
           "mysql+pymysql://root@127.0.0.1/nova (default: a SQLite file in the state dir)")


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _cloud_config(state_dir, db, transport, computes, libvirt_uri, **extra):
    from novalab.reference.common.wiring import CloudConfig

    return CloudConfig(state_dir=Path(state_dir) if state_dir else None, db_url=db,
                       transport_url=transport, computes=computes, libvirt_uri=libvirt_uri,
                       **extra)


def _start(config, telemetry):
    """Start the cloud, turning connection problems into one clear message."""
    from novalab.reference.deploy.embedded import EmbeddedCloud

    try:
        return EmbeddedCloud(config, telemetry).start()
    except Exception as exc:  # a broker, database or hypervisor we cannot reach
        console.print(Text.assemble(("novalab: the cloud did not start:", "red"), f" {exc}"))
        raise SystemExit(2) from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="novalab")
def main():
    """novalab: a compact, traced OpenStack that shows how POST /servers really flows.

    \b
    Start here:
      novalab lab start 00          the course, step by step (novalab lab list)
      novalab boot                  one traced boot, with its trace and pictures
      novalab serve                 a cloud for the openstack CLI (prints the OS_* variables)
    Then find the trace of what you did:
      novalab trace list            each boot, its server and request id
      novalab flow check --server NAME
      novalab web                   the trace page, http://127.0.0.1:8700
    """


@main.command()
@click.option("--out", "out_dir", default="out/boot", show_default=True,
              type=click.Path(file_okay=False),
              help="Directory for trace.json and the pictures made from it.")
@click.option("--name", default="demo-server", show_default=True, help="Server name.")
@click.option("--flavor", default="m1.nano", show_default=True, help="Flavor name or id.")
@click.option("--image", default="cirros", show_default=True, help="Image name or id.")
@click.option("--computes", default=1, show_default=True,
              type=click.IntRange(1, MAX_COMPUTES),
              help="Number of nova-compute hosts (embedded cloud).")
@click.option("--transport", default=None, help=TRANSPORT_HELP + " (embedded cloud)")
@click.option("--db", default=None, help=DB_HELP + " (embedded cloud)")
@click.option("--libvirt-uri", default="test:///default", show_default=True,
              help="Hypervisor URI for every compute host, e.g. qemu:///session "
                   "(embedded cloud).")
@click.option("--state-dir", default=None, type=click.Path(file_okay=False),
              help="Where the cloud keeps its database and instance files "
                   "(default: a new temporary directory); with --cloud running, the state "
                   "directory of `novalab up` (default .novalab-up).")
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait for ACTIVE.")
@click.option("--volume-size", default=1, show_default=True, type=click.IntRange(1, 1024),
              help="GB of the data volume Nova creates through Cinder.")
@click.option("--no-volume", is_flag=True, help="Boot without a data volume.")
@click.option("--no-network", is_flag=True,
              help="Run the cloud without Neutron: no port, no DHCP, no metadata "
                   "(embedded cloud).")
@click.option("--no-diagrams", is_flag=True, help="Write only trace.json.")
@click.option("--cloud", type=click.Choice(["embedded", "running"]), default="embedded",
              show_default=True,
              help="'running': boot on the cloud `novalab up` started (its --state-dir), and "
                   "collect the trace from its processes' files.")
@click.option("--web", is_flag=True,
              help="Then serve the trace page (novalab web) on http://127.0.0.1:8700 until "
                   "Ctrl-C (embedded cloud; `novalab up` serves its own).")
@topology_option(extra=" (embedded cloud)")
@click.option("-v", "--verbose", is_flag=True, help="Log what the services do.")
def boot(out_dir, name, flavor, image, computes, transport, db, libvirt_uri, state_dir,
         timeout, volume_size, no_volume, no_network, no_diagrams, cloud, web, topology,
         verbose):
    """Start an embedded cloud, boot one server, and write its trace.

    Every service runs in this process but talks as separate services do: HTTP on
    loopback, RPC through the broker, SQL to the database, libvirt at the leaf.
    By default the server gets a port on the `private` network and a 1 GB data
    volume, so every hop of the classic 58-step flow happens (--topology modern
    wires the cloud as today's Nova instead). Exits 0 only when
    the server reaches ACTIVE. The trace is written to OUT/trace.json in OTLP
    JSON, next to the flow check, sequence diagrams (SVG, HTML, Mermaid,
    PlantUML), the call graph and a Jaeger file; set OTEL_EXPORTER_OTLP_ENDPOINT
    to also send the spans to Jaeger or a Collector.
    """
    from novalab.reference.deploy.boot import BootRequest
    from novalab.reference.deploy.boot import boot as run_boot
    from novalab.tracing.otlp_json import write_trace_file
    from novalab.tracing.setup import Telemetry

    _configure_logging(verbose)
    request = BootRequest(name=name, flavor=flavor, image=image, timeout=timeout,
                          volume_size=None if no_volume else volume_size)
    if cloud == "running":
        ctx = click.get_current_context()
        embedded_only = [f"--{name.replace('_', '-')}" for name in
                         ("computes", "transport", "db", "libvirt_uri", "no_network", "web",
                          "topology")
                         if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT]
        if embedded_only:
            raise click.UsageError(
                f"{', '.join(embedded_only)}: only for the embedded cloud; the running cloud "
                "was set up by `novalab up` (see `novalab status`).")
        _boot_running(state_dir, request, Path(out_dir), no_diagrams)
        return
    telemetry = Telemetry(memory=True)
    config = _cloud_config(state_dir, db, transport, computes, libvirt_uri,
                           network=not no_network, topology=topology)
    with console.status("Starting the embedded cloud..."):
        embedded = _start(config, telemetry)
    console.print(f"cloud up: keystone {embedded.urls['keystone']}  nova "
                  f"{embedded.urls['nova']}  glance {embedded.urls['glance']}  ({computes} "
                  f"compute host(s), transport {config.transport_url.split('@')[-1]}, "
                  f"topology {config.topology})")

    try:
        result = run_boot(embedded, request, on_change=_on_change)
    except Exception as exc:
        console.print(Text.assemble(("novalab boot failed:", "red"), f" {exc}"))
        embedded.stop()
        telemetry.shutdown()
        raise SystemExit(1) from exc
    path = write_trace_file(Path(out_dir) / "trace.json", result.spans)
    embedded.stop()
    _keep_in_store(telemetry, embedded.config.state_dir)
    telemetry.shutdown()
    _summary(result, Counter(s.resource.attributes.get("service.name") for s in result.spans),
             path, telemetry.remote_skipped())
    _pictures(result.spans, path, no_diagrams)
    if web:  # the spans are in the store (_keep_in_store) before the page is served
        _serve_page(embedded.config.state_dir, f"/trace/{result.trace_id_hex}")
    sys.exit(0 if result.active else 1)


def _serve_page(state_dir: Path, path: str) -> None:
    """`boot --web`: the trace page on 127.0.0.1:8700 (any free port if taken) until Ctrl-C."""
    from novalab.diagrams import web

    def ready(server):
        click.echo(f"trace page: {web.page_url(server, path)}   (Ctrl-C to stop)")

    try:
        web.serve(state_dir, port=web.DEFAULT_PORT, on_ready=ready)
    except OSError as exc:
        console.print(Text(f"{exc}; serving on another port", "yellow"))
        web.serve(state_dir, port=0, on_ready=ready)


def _web_page(state_dir: Path, port: int, auth_url: str, no_auth: bool = False):
    """`serve`'s trace page on 127.0.0.1:PORT, in a thread; None for port 0 or a busy port.

    It asks for a keystone login (``auth_url``'s) unless ``no_auth``: the cloud is
    shared, and every user of this machine reaches loopback.
    """
    if not port:
        return None
    from novalab.diagrams import web

    try:
        return web.start(state_dir, port=port, require_auth=not no_auth, auth_url=auth_url)
    except OSError as exc:
        console.print(Text.assemble((f"novalab: no trace page: {exc}", "yellow"),
                                    " (--web-port picks another)"))
        return None


def _keep_in_store(telemetry, state_dir: Path) -> None:
    """Put every span of this process into the cloud's trace store, as serve and up do.

    The embedded boot keeps its spans in memory (cheaper than a file exporter on
    the boot's critical path) and writes them to STATE_DIR/traces/boot.jsonl
    once, so `novalab trace list --state-dir STATE_DIR` finds this boot too.
    """
    from novalab.tracing import store
    from novalab.tracing.otlp_json import OtlpJsonLinesExporter

    exporter = OtlpJsonLinesExporter(Path(state_dir) / "traces" / "boot.jsonl")
    try:
        spans = telemetry.finished_spans()
        for start in range(0, len(spans), 512):
            exporter.export(spans[start:start + 512])
    finally:
        exporter.shutdown()
    store.register(state_dir, "boot")


def _on_change(server) -> None:
    task = server.get("OS-EXT-STS:task_state") or "-"
    console.print(f"  {server['status']:<7} vm_state={server['OS-EXT-STS:vm_state']:<9} "
                  f"task_state={task}")


def _pictures(trace, path: Path, skip: bool) -> None:
    """The flow check and drawings, on the flow table the trace shows (classic or today's)."""
    if skip:
        return
    from novalab.diagrams.flows import detect_flow
    from novalab.diagrams.load import load_trace
    from novalab.diagrams.outputs import write_all

    with console.status("Drawing the flow..."):
        trace = load_trace(trace)
        written = write_all(trace, path.parent, flow=detect_flow(trace))
    console.print("pictures:   " + "  ".join(str(p) for p in written))


def _boot_running(state_dir, request, out_dir: Path, no_diagrams: bool) -> None:
    """`novalab boot --cloud running`: the same boot against `novalab up`'s processes."""
    from novalab.reference.deploy.running import NotRunning, boot_against_running
    from novalab.reference.deploy.statedir import DEFAULT_STATE_DIR
    from novalab.tracing import collect

    try:
        result = boot_against_running(state_dir or DEFAULT_STATE_DIR, request,
                                      on_change=_on_change)
    except NotRunning as exc:
        console.print(Text.assemble(("novalab boot:", "red"), f" {exc}"))
        raise SystemExit(2) from exc
    path = collect.write(result.document, out_dir / "trace.json")
    _summary(result, result.spans_by_service(), path)
    _pictures(path, path, no_diagrams)
    sys.exit(0 if result.active else 1)


def _summary(result, by_service: Counter, path: Path,
             remote_skipped: dict[str, int] | None = None) -> None:
    server = result.server
    table = Table(show_header=False, box=None)
    status = server["status"]
    table.add_row("server", f"{server['name']} ({server['id']})")
    table.add_row("status", Text(status, "green" if status == "ACTIVE" else "red"))
    if server.get("fault"):
        table.add_row("fault", server["fault"]["message"])
    table.add_row("client time", f"{result.elapsed * 1000:.0f} ms (POST to ACTIVE seen)")
    table.add_row("trace id", result.trace_id_hex)
    table.add_row("spans", f"{sum(by_service.values())} from {len(by_service)} services: " +
                  ", ".join(f"{k} {v}" for k, v in sorted(by_service.items())))
    if result.dropped:
        table.add_row(Text("dropped", "red"), f"{result.dropped}")
    for name, count in (remote_skipped or {}).items():
        table.add_row(Text("not sent", "yellow"), f"{count} spans did not reach the {name} "
                      "endpoint (it was down); the trace file has them all")
    table.add_row("trace file", str(path))
    console.print(table)


@main.command()
@click.option("--computes", default=1, show_default=True,
              type=click.IntRange(1, MAX_COMPUTES), help="Number of nova-compute hosts.")
@click.option("--transport", default=None, help=TRANSPORT_HELP)
@click.option("--db", default=None, help=DB_HELP)
@click.option("--libvirt-uri", default="test:///default", show_default=True,
              help="Hypervisor URI for every compute host, e.g. qemu:///session.")
@click.option("--state-dir", default=".novalab", show_default=True,
              type=click.Path(file_okay=False), help="Database, instance files and traces.")
@click.option("--host", "bind_host", default="127.0.0.1", show_default=True,
              help="Address the APIs listen on.")
@click.option("--web-port", default=8700, show_default=True, type=click.IntRange(0, 65535),
              help="The trace page (novalab web) on 127.0.0.1:PORT; 0: none.")
@click.option("--no-web-auth", is_flag=True,
              help="The trace page asks no keystone login: only for a machine no one else "
                   "logs in to (every local user reaches 127.0.0.1).")
@click.option("--vif-plugging-timeout", default=300.0, show_default=True,
              type=click.FloatRange(min=0),
              help="Seconds nova-compute waits for network-vif-plugged before failing the "
                   "build (0: no wait); a lab cloud drilling vif-plugged-timeout uses e.g. 5.")
@topology_option()
@click.option("-v", "--verbose", is_flag=True, help="Log what the services do.")
def serve(computes, transport, db, libvirt_uri, state_dir, bind_host, web_port, no_web_auth,
          vif_plugging_timeout, topology, verbose):
    """Run the embedded cloud on the standard ports until interrupted.

    keystone 5000, nova 8774, nova metadata 8775, cinder 8776, glance 9292,
    neutron 9696, the metadata proxy 8780, ceph-mon 6789, ceph-rgw 7480 and
    novalab's lab service 8790 (what `novalab lab` asks to grade); with
    --topology modern, placement 8778 too.
    Spans go to the trace store in STATE_DIR/traces/ (OTLP JSON lines; find
    them with `novalab trace list`) and, when OTEL_EXPORTER_OTLP_ENDPOINT is
    set, over OTLP. The trace page (`novalab web`) shows them on
    http://127.0.0.1:8700 as they arrive, to those who log in to the cloud's
    keystone: each project sees its own servers' traces, admins all of them.
    """
    from novalab.reference.common.credentials import PERSONA_PASSWORD
    from novalab.reference.common.wiring import STANDARD_PORTS
    from novalab.reference.deploy.statedir import write_json
    from novalab.tracing import store
    from novalab.tracing.setup import Telemetry

    _configure_logging(verbose)
    state = Path(state_dir)
    pid_file = state / "run" / "serve.pid"
    if store.running(state):
        raise click.UsageError(f"a cloud already runs from {state} (pid file in {state / 'run'})"
                               "; stop it first or give another --state-dir")
    telemetry = Telemetry(file_path=state / "traces" / "serve.jsonl")
    config = _cloud_config(state, db, transport, computes, libvirt_uri, bind_host=bind_host,
                           ports=dict(STANDARD_PORTS),
                           vif_plugging_timeout=vif_plugging_timeout, topology=topology)
    from novalab.reference.deploy import seed

    admin_password = seed.first_credentials(config.credentials)
    cloud = _start(config, telemetry)
    from novalab.labs.service.build import lab_service

    lab_service(cloud.wiring, cloud.keystone)  # the course's grading, inside the cloud
    page = _web_page(state, web_port, cloud.identity_url, no_web_auth)
    if page:  # where learners on other accounts read their traces (tracing/remote.py)
        cloud.keystone.register_endpoint("trace", "novalab-web", page.url)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{os.getpid()}\n")
    store.register(state, "serve")
    # A plain flag: a signal handler must not take a lock the interrupted main
    # thread may hold (Event.set inside Event.wait deadlocks). Installed before
    # the variables are printed, so whoever reads them can already stop us.
    stopping = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.append(True))
    os_env = {
        "OS_AUTH_URL": cloud.identity_url, "OS_USERNAME": "demo",
        "OS_PASSWORD": PERSONA_PASSWORD, "OS_PROJECT_NAME": "demo",
        "OS_USER_DOMAIN_ID": "default", "OS_PROJECT_DOMAIN_ID": "default",
        "OS_IDENTITY_API_VERSION": "3", "OS_REGION_NAME": "RegionOne",
    }
    # What other commands (`novalab lab`) need to reach this cloud, as `up` keeps it
    # in state.json; written once the cloud answers, removed when it stops.
    cloud_file = state / "cloud.json"
    write_json(cloud_file, {"kind": "serve", "pid": os.getpid(), "os_env": os_env,
                            "urls": dict(cloud.urls),
                            "web": f"{page.url}/" if page else None,
                            "topology": config.topology})
    click.echo(f"# novalab cloud is up (topology {config.topology}). For the openstack CLI:")
    for key, value in os_env.items():
        click.echo(f"export {key}={value}")
    click.echo(f"# traces: {state / 'traces'}   (novalab trace list; Ctrl-C to stop)")
    if admin_password:
        click.echo("# " + seed.ADMIN_PASSWORD_NOTE.format(password=admin_password,
                                                          state_dir=state))
    if page:
        click.echo(f"# trace page: {page.url}/")
    while not stopping:
        time.sleep(0.2)
    console.print("stopping...")
    if page:
        page.stop()
    cloud.stop()
    telemetry.shutdown()
    cloud_file.unlink(missing_ok=True)
    pid_file.unlink(missing_ok=True)


units.install()  # the lab service and the trace page, handed to the deployment
register_diagrams(main)
register_deploy(main)
register_credentials(main)
register_faults(main)
register_trace(main, count_steps=steps_of)
register_scheduler(main)
register_labs(main)
register_class(main)

if __name__ == "__main__":  # pragma: no cover
    main(prog_name=os.path.basename(sys.argv[0]))
