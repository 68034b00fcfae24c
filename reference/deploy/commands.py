"""The deployment commands of ``novalab``: up, down, status, service, db, queues.

``register(main)`` adds them to the ``novalab`` group (``labs/cli.py``), which is
also how ``novalab up`` starts each service process (``python -m novalab.labs.cli
service NAME``): the command line composes the product, novalab's own units with
OpenStack's (``labs/units.py``).

    novalab up [--computes N] [--topology classic|modern]
                                  every service as its own process, RabbitMQ + SQL server
    novalab status | down         what runs, and stopping it (SIGTERM, then SIGKILL)
    novalab service NAME          one service in the foreground
    novalab db sync               create or upgrade the schema (Alembic)
    novalab queues                novalab's exchanges and queues in RabbitMQ
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from novalab.reference.deploy.statedir import (
    DEFAULT_BIND,
    DEFAULT_DB,
    DEFAULT_STATE_DIR,
    DEFAULT_TRANSPORT,
    ENV_ADVERTISE,
    ENV_BIND,
    ENV_DB,
    ENV_TOPOLOGY,
    ENV_TRANSPORT,
    ENV_URLS_FROM,
    TOPOLOGIES,
    URLS_FROM,
)
from novalab.tracing.cli import PLAIN

console = Console(stderr=True, **PLAIN)

STATE_DIR = click.option("--state-dir", default=DEFAULT_STATE_DIR, show_default=True,
                         type=click.Path(file_okay=False),
                         help="Logs, pid files, trace files and state.json of the deployment.")
TRANSPORT = click.option("--transport", "transport_url", default=DEFAULT_TRANSPORT,
                         show_default=True, envvar=ENV_TRANSPORT,
                         help=f"RabbitMQ URL (env {ENV_TRANSPORT}).")
VIF_PLUGGING_TIMEOUT_HELP = (
    "Seconds nova-compute waits for Neutron's network-vif-plugged before it fails the "
    "build ([DEFAULT] vif_plugging_timeout; 0: do not wait). A lab cloud drilling the "
    "vif-plugged-timeout fault uses e.g. 5.")
TOPOLOGY_HELP = (
    "How Nova is wired. classic: the Grizzly-era chain the 58-step table draws: nova-api "
    "casts run_instance to the scheduler, which picks a host from the compute nodes' rows; "
    "no placement. modern: Nova as since Pike: nova-api writes the build request to the "
    "API database and casts schedule_and_build_instances to the super conductor, which "
    "calls the scheduler's select_destinations; the scheduler claims the resources in "
    "placement (its own API on 8778, in the catalog), to which compute hosts report.")


def topology_option(default: str | None = "classic", extra: str = "",
                    envvar: str | None = None):
    """``--topology classic|modern`` for boot, serve, up and service."""
    return click.option("--topology", type=click.Choice(TOPOLOGIES), default=default,
                        show_default=default is not None, envvar=envvar,
                        help=TOPOLOGY_HELP + extra)


DB = click.option("--db", "db_url", default=DEFAULT_DB, show_default=True, envvar=ENV_DB,
                  help=f"SQLAlchemy URL of PostgreSQL, MariaDB (mysql+pymysql://root@127.0.0.1/"
                       f"novalab) or SQLite (env {ENV_DB}).")


BIND = click.option("--bind-address", default=DEFAULT_BIND, show_default=True,
                    envvar=ENV_BIND,
                    help=f"The address every API (and the trace page) listens on; 0.0.0.0 "
                         f"for all, then give --advertise-address (env {ENV_BIND}).")
ADVERTISE = click.option("--advertise-address", default=None, envvar=ENV_ADVERTISE,
                         help="The address other hosts reach this host's services at: what "
                              "goes into keystone's catalog and the spans' host.ip. Default: "
                              f"the bind address (env {ENV_ADVERTISE}).")


def _fail(message: str, code: int = 2):
    console.print(Text.assemble(("novalab:", "red"), f" {message}"))
    raise SystemExit(code)


def _echo(line: str) -> None:
    console.print(line)


def _status_table(rows, topology: str | None = None) -> Table:
    """One row per unit; "rpc topics" lists every RPC server the unit runs, as
    ``topic.server`` (the queue names `novalab queues` shows; Neutron's agents too: a
    compute host's L2 agent runs in its nova-compute process)."""
    title = "novalab services" + (f" (topology {topology})" if topology else "")
    table = Table(title=title, title_justify="left")
    for column in ("service", "host", "pid", "state", "health", "rpc topics", "log"):
        table.add_column(column)
    for row in rows:
        state = Text("up", "green") if row.running and row.health.ok else \
            Text("unhealthy", "yellow") if row.running else Text("down", "red")
        table.add_row(row.unit.name, row.unit.host or "-", str(row.pid or "-"), state,
                      row.health.detail, "\n".join(row.topics) or "-", f"logs/{row.log.name}")
    return table


def _print_status(rows, topology: str | None = None) -> None:
    """The table, then what happened to each unit, unwrapped: how a dead one ended,
    a restart by `up`, the newest warning in its log since it started.

    Its console is made here, not at import: rich fixes a console's width when it is
    made, and the table should fit the terminal (``COLUMNS``) it is printed to."""
    console = Console(stderr=True, **PLAIN)
    console.print(_status_table(rows, topology))
    noted = [row for row in rows if row.notes]
    if noted:
        console.print("what happened (how a service ended, its restart by `up`, the newest "
                      "warning in its log since it started; logs/ has the rest):",
                      soft_wrap=True)
        for row in noted:
            for note in row.notes:
                console.print(f"  {row.unit.id:<24} {note}", soft_wrap=True)


def _print_env(record: dict, state_dir: Path) -> None:
    topology = record.get("topology", "classic")
    click.echo(f"# novalab cloud is up (topology {topology}). For the openstack CLI:")
    for key, value in record["os_env"].items():
        click.echo(f"export {key}={value}")
    click.echo(f"# traces: {state_dir / 'traces'}   (novalab trace list; "
               "novalab flow check --server NAME)")
    if record.get("web_url"):
        click.echo(f"# trace page: {record['web_url']}/")


@click.command()
@click.option("--computes", default=1, show_default=True, type=click.IntRange(0, 64),
              help="Number of compute hosts (compute-1..N), one nova-compute process each; "
                   "0: a controller only, its compute hosts elsewhere (docs/multihost.md).")
@TRANSPORT
@DB
@click.option("--otlp", default=None, metavar="URL",
              help="OTLP endpoint for every process (sets OTEL_EXPORTER_OTLP_ENDPOINT), "
                   "e.g. http://127.0.0.1:4318 for Jaeger.")
@STATE_DIR
@click.option("--timeout", default=60.0, show_default=True,
              help="Seconds each service may take to become healthy.")
@click.option("--web-port", default=8700, show_default=True, type=click.IntRange(0, 65535),
              help="The trace page (novalab web) on 127.0.0.1:PORT, one more unit; 0: none.")
@click.option("--no-web-auth", is_flag=True,
              help="The trace page asks no keystone login on loopback: only for a machine "
                   "no one else logs in to (every local user reaches 127.0.0.1).")
@click.option("--vif-plugging-timeout", type=click.FloatRange(min=0), default=None,
              help=VIF_PLUGGING_TIMEOUT_HELP + " Default: the running deployment's, else 300.")
@topology_option(default=None, extra=" Default: the running deployment's, else classic; "
                                     "a running deployment keeps its own (`novalab down` "
                                     "first to change it).")
@BIND
@ADVERTISE
def up(computes, transport_url, db_url, otlp, state_dir, timeout, web_port, no_web_auth,
       vif_plugging_timeout, topology, bind_address, advertise_address):
    """Start every service as its own process, on the standard loopback ports.

    Checks RabbitMQ and the database first (creating the database if it is
    missing), brings the schema to the latest revision, then starts the
    services in order, each once the one before is healthy. Already running
    services are left alone, so `up` also restarts whatever has died.
    --topology modern adds placement-api (and the modern chain's wiring) as a
    process of its own; `novalab status` shows the topology.
    """
    from novalab.reference.deploy import preflight, processes

    options = processes.UpOptions(computes=computes, transport_url=transport_url,
                                  db_url=db_url, otlp=otlp, state_dir=state_dir,
                                  timeout=timeout, web_port=web_port,
                                  web_no_auth=no_web_auth,
                                  vif_plugging_timeout=vif_plugging_timeout,
                                  topology=topology, bind_address=bind_address,
                                  advertise_address=advertise_address)
    try:
        record = processes.up(options, echo=_echo)
    except preflight.PreflightError as exc:
        _fail(f"cannot start: {exc}")
    except processes.DeployError as exc:
        _fail(f"up failed: {exc}")
    from novalab.tracing.store import register as register_store

    register_store(record["state_dir"], "up")
    _print_status(processes.status(state_dir), record.get("topology"))
    _print_env(record, Path(record["state_dir"]))


@click.command()
@STATE_DIR
def status(state_dir):
    """Show each service's process, health and RPC topics (exit 1 if any is down or
    unhealthy), under the cloud's topology.

    Below the table, what happened: how a service that is not running ended
    (stopped, failed, or killed or crashed when it could leave no word), that
    `novalab up` restarted one, and the newest warning or error in each log.
    """
    from novalab.reference.deploy import processes

    rows = processes.status(state_dir)
    if not rows:
        _fail(f"no deployment in {state_dir} (start one with `novalab up`)", 1)
    record = processes.StateDir(state_dir).load()
    # A deployment recorded before topologies existed ran the classic one.
    _print_status(rows, record.get("topology", "classic"))
    if record.get("os_env") and any(r.running for r in rows):
        _print_env(record, Path(record["state_dir"]))
    sys.exit(0 if all(r.running and r.health.ok for r in rows) else 1)


@click.command()
@STATE_DIR
@click.option("--grace", default=10.0, show_default=True,
              help="Seconds between SIGTERM and SIGKILL.")
def down(state_dir, grace):
    """Stop every service (last started first) and check that none is left."""
    from novalab.reference.deploy import processes

    left = processes.down(state_dir, grace=grace, echo=_echo)
    if left:
        _fail(f"still running: {', '.join(left)}", 1)
    console.print("all novalab services stopped")


@click.command()
@click.argument("name")
@click.option("--host", default=None, help="Host name: required for per-host services "
                                           "(nova-compute: compute-1, compute-2, ...).")
@TRANSPORT
@DB
@STATE_DIR
@click.option("--vif-plugging-timeout", type=click.FloatRange(min=0), default=300.0,
              show_default=True, envvar="NOVALAB_VIF_PLUGGING_TIMEOUT",
              help=VIF_PLUGGING_TIMEOUT_HELP + " (nova-compute; env "
                                               "NOVALAB_VIF_PLUGGING_TIMEOUT)")
@topology_option(envvar=ENV_TOPOLOGY,
                 extra=f" Every process of one cloud needs the same (env {ENV_TOPOLOGY}).")
@BIND
@ADVERTISE
@click.option("--urls-from", type=click.Choice(URLS_FROM), default="state-dir",
              show_default=True, envvar=ENV_URLS_FROM,
              help="Where to find the other services' URLs: the ready files of --state-dir "
                   "(services of this host), or keystone's catalog in --db (a host without "
                   f"the controller's state directory: a compute host) (env {ENV_URLS_FROM}).")
@click.option("--after", multiple=True, metavar="UNIT",
              help="Wait until UNIT (keystone, nova-compute-compute-1, ...) has written its "
                   "ready file in --state-dir before building this service; repeatable. "
                   "`up` starts every process at once this way, so their imports overlap "
                   "and they still come up in order.")
def service(name, host, transport_url, db_url, state_dir, vif_plugging_timeout, topology,
            bind_address, advertise_address, urls_from, after):
    """Run one service in the foreground until SIGTERM or Ctrl-C.

    NAME is one of the registry's services (novalab.reference.deploy.services.
    BUILDERS), or novalab-web: the trace page that `up` runs beside them. The
    schema must be current (`novalab db sync`). Spans go to
    STATE_DIR/traces/NAME[-HOST].jsonl and, when OTEL_EXPORTER_OTLP_ENDPOINT is
    set, over OTLP. On several hosts (docs/multihost.md): --bind-address and
    --advertise-address say where it listens and how others reach it; a compute
    host finds the controller with --urls-from catalog.
    """
    from novalab.reference.deploy import migrations, processes

    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s {name}{'@' + host if host else ''} "
                               "%(name)s: %(message)s")
    try:
        if name != processes.WEB_UNIT and migrations.current(db_url) != migrations.head():
            _fail(f"the database schema is not current: run `novalab db sync --db ...` "
                  f"(at {migrations.current(db_url)}, latest {migrations.head()})")
        processes.run_service(name, host, transport_url=transport_url, db_url=db_url,
                              state_dir=state_dir,
                              vif_plugging_timeout=vif_plugging_timeout, topology=topology,
                              bind_address=bind_address, advertise_address=advertise_address,
                              urls_from=urls_from, after=after)
    except processes.DeployError as exc:
        _fail(str(exc))


@click.group()
def db():
    """The database schema (Alembic revisions in reference/deploy/migrations)."""


@db.command("sync")
@DB
def db_sync(db_url):
    """Create the database if missing and upgrade its schema to the latest revision."""
    from novalab.reference.common.db import mask_password
    from novalab.reference.deploy import migrations, preflight

    try:
        created = preflight.ensure_database(db_url)
    except preflight.PreflightError as exc:
        _fail(str(exc))
    if created:
        click.echo(f"created database {created!r}")
    before, after = migrations.upgrade(db_url)
    where = mask_password(db_url)
    if before == after:
        click.echo(f"{where}: already at {after}")
    else:
        click.echo(f"{where}: upgraded {before or 'empty'} -> {after}")


@click.command()
@TRANSPORT
@click.option("--api", default="http://127.0.0.1:15672", show_default=True,
              help="RabbitMQ management API, tried before rabbitmqctl.")
@click.option("--all", "everything", is_flag=True, help="Every queue, not only novalab's.")
def queues(transport_url, api, everything):
    """List novalab's exchanges and queues with message and consumer counts."""
    from novalab.reference.deploy.queues import QueuesUnavailable, list_queues

    try:
        listing = list_queues(transport_url, api_url=api, everything=everything)
    except QueuesUnavailable as exc:
        _fail(str(exc))
    exchanges = Table(title=f"exchanges (from {listing.source})", title_justify="left")
    for column in ("exchange", "type", "durable"):
        exchanges.add_column(column)
    for row in listing.exchanges:
        exchanges.add_row(row["name"] or "(default)", row["type"], str(row["durable"]))
    table = Table(title="queues", title_justify="left")
    for column in ("queue", "messages", "consumers", "durable"):
        table.add_column(column)
    for row in listing.queues:
        table.add_row(row["name"], str(row["messages"]), str(row["consumers"]),
                      str(row["durable"]))
    out = Console(**PLAIN)
    out.print(exchanges)
    out.print(table)


COMMANDS = (up, down, status, service, db, queues)


def register(group: click.Group) -> click.Group:
    """Add the deployment commands to ``group`` (the ``novalab`` command)."""
    for command in COMMANDS:
        group.add_command(command)
    return group

