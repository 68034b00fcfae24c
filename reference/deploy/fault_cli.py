"""``novalab fault``: switch the failure drills' faults on and off, and list them.

    novalab fault list                   every fault: steps, service, what a learner sees
    novalab fault inject NAME [--once]   switch NAME on (with --once: for one strike)
    novalab fault clear [NAME]           switch NAME (or every fault) off

The faults live in the deployment's state directory (``faults.json``; see
``reference/common/faults.py``); every process of that cloud reads it, so an
injection strikes every user of the cloud. Without ``--state-dir`` the
commands find the deployment as ``novalab trace`` does: the running one, else
the last one novalab started.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from novalab.reference.common.faults import CATALOG, RUNNING_CLOUD, Faults, UnknownFault
from novalab.reference.deploy.statedir import StateDir
from novalab.tracing.cli import PLAIN

console = Console(stderr=True, **PLAIN)

ADMIN = ("Injecting is an administrator's act: a fault strikes every user of the cloud, and "
         "writing the state directory is the privilege it takes.")
STATE_DIR = click.option("--state-dir", default=None, type=click.Path(file_okay=False),
                         help="The deployment's state directory (default: the running "
                              "cloud's, else the last one novalab started).")


def _fail(message: str, code: int = 2):
    console.print(Text.assemble(("novalab fault:", "red"), f" {message}"), soft_wrap=True)
    raise SystemExit(code)


def _locate(state_dir) -> Path:
    from novalab.tracing.store import NoTrace, locate

    try:
        root = locate(state_dir)
    except NoTrace:
        _fail("no deployment found: start one (`novalab serve`, `novalab up`) or give "
              "--state-dir")
    if not root.is_dir():
        _fail(f"no deployment in {root}")
    return root


def deployment_of(root: Path) -> tuple[str, dict]:
    """("up", its state.json) for a cloud of one process per service, else ("embedded", {})."""
    record = StateDir(root).load()
    return ("up", record) if record else ("embedded", {})


def refusal(name: str, root: Path) -> str | None:
    """Why fault ``name`` cannot strike the deployment in ``root``, if it cannot."""
    kind, record = deployment_of(root)
    fault = CATALOG[name]
    if fault.cloud == RUNNING_CLOUD and kind != "up":
        return (f"{name} kills the nova-compute process, so it runs only on a cloud of one "
                f"process per service (`novalab up`); {root} is an embedded cloud (`novalab "
                "serve` or `boot`), whose one process is every service.")
    if name == "broker-unreachable" and kind == "up" and \
            not str(record.get("transport_url", "")).startswith("memory"):
        return (f"{name} makes the in-memory broker unreachable; this cloud's RPC goes "
                "through RabbitMQ. Run the drill for real: stop RabbitMQ (`sudo rabbitmqctl "
                "stop_app`), and start it again (`sudo rabbitmqctl start_app`) to end it.")
    return None


@click.group(epilog=ADMIN)
def fault():
    """Fault knobs for failure drills: real failures at a step of the 58-step boot.

    Each fault makes one service really fail at its hop (ceph-rgw serves altered
    bytes, neutron-server fails a binding, cinder-volume fails a create, ...);
    the instance then ends in ERROR with a fault naming the hop, and the trace
    shows where. `novalab fault list` says what each one does. Injecting is an
    administrator's act: a fault strikes every user of the cloud, and writing
    the deployment's state directory is the privilege it takes.
    """


@fault.command("list")
@STATE_DIR
def list_faults(state_dir):
    """Every fault: the steps it strikes, the service that fails, what a learner sees."""
    from novalab.tracing.store import NoTrace, locate

    try:
        root = locate(state_dir)
        injected = Faults(root).injected() if root.is_dir() else {}
        title = f"faults of {root}"
    except NoTrace:
        root, injected, title = None, {}, "faults (no deployment found)"
    table = Table(title=title, title_justify="left", show_lines=True)
    for column in ("fault", "steps", "service", "a learner sees", "state"):
        table.add_column(column)
    for fault_ in CATALOG.values():
        entry = injected.get(fault_.name)
        scoped = sum(1 for key, e in injected.items()
                     if key != fault_.name and e.get("fault") == fault_.name)
        state = "-" if entry is None else Text("once" if entry.get("once") else "active",
                                                style="red")
        if scoped:  # armed for one learner, server or object each (lab 10's drills)
            state = Text.assemble(state if entry else "", "\n" if entry else "",
                                  (f"{scoped} scoped", "red"))
        service = fault_.service + (" (up only)" if fault_.cloud == RUNNING_CLOUD else "")
        table.add_row(fault_.name, fault_.steps_text, service, fault_.learner_sees_short, state)
    Console(**PLAIN).print(table)


@fault.command(epilog=ADMIN)
@click.argument("name")
@click.option("--once", is_flag=True, help="Strike once, then switch off by itself.")
@STATE_DIR
def inject(name, once, state_dir):
    """Switch fault NAME on: the next boot fails at its step (every boot, unless --once).

    Needs write access to the deployment's state directory: injecting is an
    administrator's act, since a fault strikes every user of the cloud.
    """
    if name not in CATALOG:
        _fail(str(UnknownFault(name)))
    root = _locate(state_dir)
    reason = refusal(name, root)
    if reason:
        _fail(f"not injecting {name}: {reason}")
    try:
        Faults(root).inject(name, once=once)
    except PermissionError as exc:
        _fail(f"cannot write {exc.filename or root}: {ADMIN}", 1)
    fault_ = CATALOG[name]
    click.echo(f"injected {name}{' (once)' if once else ''} into {root}: step(s) "
               f"{fault_.steps_text}, {fault_.service} fails")
    click.echo(f"  {fault_.happens}")
    if fault_.note:
        click.echo(f"  note: {fault_.note}")
    click.echo(f"  clear it with: novalab fault clear {name}")


@fault.command(epilog=ADMIN)
@click.argument("name", required=False)
@STATE_DIR
def clear(name, state_dir):
    """Switch fault NAME off, or every fault without NAME."""
    if name is not None and name not in CATALOG:
        _fail(str(UnknownFault(name)))
    root = _locate(state_dir)
    try:
        cleared = Faults(root).clear(name)
    except PermissionError as exc:
        _fail(f"cannot write {exc.filename or root}: {ADMIN}", 1)
    if cleared:
        click.echo(f"cleared {', '.join(cleared)} in {root}")
    else:
        click.echo(f"no fault {'named ' + name + ' ' if name else ''}was on in {root}")


def register(group: click.Group) -> click.Group:
    """Add ``novalab fault`` to ``group`` (the ``novalab`` command)."""
    group.add_command(fault)
    return group
