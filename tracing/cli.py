"""``novalab trace``: list, show and collect the traces in a deployment's trace store.

    novalab trace list [--server ID|NAME] [--request-id REQ] [--since 10m] [--json]
    novalab trace show   --server NAME | --request-id REQ | --trace-id ID | --latest
    novalab trace collect --server NAME ... -o trace.json

The same four selectors (with ``--state-dir``) choose the trace for ``flow
check``, ``diagram`` and ``export jaeger``: :func:`selector_options` adds them
to a command and :func:`select_spans` resolves them. Without ``--state-dir``
the store is found by ``store.locate`` (the running or last deployment).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import datetime

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from novalab.tracing import collect
from novalab.tracing.model import Span, Trace
from novalab.tracing.remote import RemoteTraces
from novalab.tracing.store import NoTrace, Row, TraceStore, locate

# Plain text: what users named (servers, images, projects) and what the cloud said
# (faults) print as written, never read as rich markup or emoji codes (a server
# named "[/]" crashed `trace list` for everyone); a style is a Text's, never a tag.
PLAIN = {"highlight": False, "markup": False, "emoji": False}
console = Console(stderr=True, **PLAIN)

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class SelectionError(click.ClickException):
    """No trace matches (exit code 1: the store was read, the trace is not there)."""

    exit_code = 1


def parse_since(text: str | None) -> int | None:
    """``10m``, ``2h``, ``1d`` or an ISO time, as nanoseconds since the epoch."""
    if not text:
        return None
    found = _DURATION.match(text.strip())
    if found:
        return int((time.time() - float(found.group(1)) * _UNITS[found.group(2)]) * 1e9)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1e9)
    except ValueError as exc:
        raise click.BadParameter(f"{text!r}: give a duration (30s, 10m, 2h, 1d) or an ISO "
                                 "time (2026-11-23T20:00)", param_hint="--since") from exc


STATE_DIR_HELP = ("The deployment's state directory (default: the running or last "
                  "deployment novalab started; see `novalab trace stores`).")


def selector_options(func=None, *, several_state_dirs: bool = False):
    """Add ``--state-dir``, ``--server``, ``--request-id``, ``--trace-id``, ``--latest``.

    ``several_state_dirs``: ``--state-dir`` may be repeated, one per host of a
    cloud spread over several (``trace collect`` merges them).
    """
    if func is None:
        return lambda f: selector_options(f, several_state_dirs=several_state_dirs)
    state_dir = click.option(
        "--state-dir", default=None, type=click.Path(file_okay=False),
        multiple=several_state_dirs,
        help=STATE_DIR_HELP + (" Repeat it, one per host, to merge the hosts' stores "
                               "(docs/multihost.md)." if several_state_dirs else ""))
    options = [
        state_dir,
        click.option("--server", default=None, metavar="ID|NAME",
                     help="The boot of this server (by id, or by name: the newest)."),
        click.option("--request-id", default=None, metavar="REQ",
                     help="The trace of an OpenStack request id (req-..., as "
                          "`openstack server event list` shows)."),
        click.option("--trace-id", default=None,
                     help="A trace id (32 hex digits): of the TRACE file, or in the store."),
        click.option("--latest", is_flag=True, help="The latest boot (else request)."),
        click.option("--timeout", default=10.0, show_default=True,
                     help="Seconds to wait for a trace that is still arriving."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def open_store(state_dir: str | None) -> TraceStore:
    """The store the selectors search: ``--state-dir``'s, the running or last
    deployment's, or, when no store here is yours to read, the trace page of the cloud
    your ``OS_*`` variables log in to (tracing/remote.py)."""
    try:
        path = locate(state_dir)
        store = TraceStore(path)
        readable = store.exists() and os.access(store.traces_dir, os.R_OK | os.X_OK)
    except NoTrace as exc:
        path, store, readable, found = None, None, False, exc
    if not readable and not state_dir:
        try:
            remote = RemoteTraces.from_environment()
        except NoTrace as exc:
            raise SelectionError(str(exc)) from exc
        if remote is not None:
            return remote
    if path is None:
        raise SelectionError(str(found))
    if not store.exists():
        raise SelectionError(f"no trace files in {store.traces_dir}")
    if not readable:
        raise SelectionError(f"{store.traces_dir} is not yours to read: set the OS_* "
                             "variables of your cloud user and the trace page answers for it")
    return store


def select_spans(*, state_dir=None, server=None, request_id=None, trace_id=None,
                 latest=False, timeout=10.0) -> tuple[list[Span], Row]:
    """The spans of the trace the selectors name, from the store (one trace id)."""
    if sum(bool(x) for x in (server, request_id, trace_id, latest)) != 1:
        raise click.UsageError("choose the trace with exactly one of --server, --request-id, "
                               "--trace-id and --latest")
    store = open_store(state_dir)
    try:
        selection = store.select(server=server, request_id=request_id, trace_id=trace_id,
                                 latest=latest, timeout=timeout)
    except NoTrace as exc:
        raise SelectionError(str(exc)) from exc
    if selection.note:
        console.print(Text.assemble(("note:", "yellow"), f" {selection.note}"))
    return selection.spans, selection.row


# -- presentation -------------------------------------------------------------------------------

def _when(ns: int) -> str:
    moment = datetime.fromtimestamp(ns / 1e9)
    today = datetime.now().date() == moment.date()
    return moment.strftime("%H:%M:%S" if today else "%Y-%m-%d %H:%M:%S")


def _servers(row: Row) -> str:
    return ", ".join(f"{name or '?'} ({uuid})" for uuid, name in row.servers.items()) or "-"


# What counts a boot's steps: the flow check, which lives above tracing (diagrams).
# The command line hands it in (:func:`register`); without one the column says "-".
StepCounter = Callable[[Trace], tuple[str, str]]
_count_steps: StepCounter | None = None


def _steps(store: TraceStore, rows: list[Row]) -> dict[str, tuple[str, str]]:
    """``(matched/expected, flow)`` for each boot row: the flow check, run now, on the
    table the boot shows (``flows.detect``: a modern boot counts the modern steps).

    Kept in the store's index as "FLOW M/E" (kind ``flow-steps``; the older kind
    ``steps`` counted every boot on the classic table and is no longer read).
    """
    if isinstance(store, RemoteTraces):  # the page ran each flow check itself
        return {r.id: store.steps.get(r.id, ("?", "")) if r.kind == "boot" else ("-", "")
                for r in rows}
    steps = {r.id: ("-", "") for r in rows if r.kind != "boot"}
    for row in rows:
        if row.kind == "boot":
            known = store.derived(row, "flow-steps")
            steps[row.id] = tuple(reversed(known.split(" ", 1))) if known else None
    todo = [r for r in rows if steps[r.id] is None]
    if _count_steps is None:  # nothing to count with: what the index holds, else "-"
        return {**steps, **{r.id: ("-", "") for r in todo}}
    loaded = store.load_many(todo) if todo else {}
    for row in todo:
        spans = loaded.get(row.id)
        if not spans:
            steps[row.id] = ("?", "")
            continue
        counted, name = _count_steps(Trace.of(spans))
        steps[row.id] = (counted, name)
    if todo:
        store.remember([(r, "flow-steps", f"{steps[r.id][1]} {steps[r.id][0]}") for r in todo
                        if steps[r.id][0] != "?"])
    return steps


@click.group("trace")
def trace_group():
    """Find the trace of what you just did: list, show, collect."""


@trace_group.command("list")
@click.option("--state-dir", default=None, type=click.Path(file_okay=False),
              help="The deployment's state directory (default: the running or last one).")
@click.option("--server", default=None, metavar="ID|NAME", help="Only boots of this server.")
@click.option("--request-id", default=None, metavar="REQ",
              help="Only the trace with this request id.")
@click.option("--since", default=None, metavar="WHEN",
              help="Only traces started since: 30s, 10m, 2h, 1d or an ISO time.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100000),
              help="At most this many rows, newest first.")
@click.option("--all", "everything", is_flag=True,
              help="Also periodic work, health probes and the requests a boot stands for.")
@click.option("--no-steps", is_flag=True, help="Skip the flow check of each boot (faster).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def trace_list(state_dir, server, request_id, since, limit, everything, no_steps, as_json):
    """List the traces of a deployment, newest first.

    A boot made with the openstack CLI is one row, stitched from the CLI's
    separate requests (token, lookups, POST /servers, polls); pass its TRACE ID
    or the server's name to `flow check`, `diagram` and `export jaeger`.
    """
    store = open_store(state_dir).refresh()
    rows = store.rows(everything=everything)
    since_ns = parse_since(since)
    if since_ns is not None:
        rows = [r for r in rows if r.start_ns >= since_ns]
    if server:
        rows = [r for r in rows if server in r.servers or server in r.servers.values()]
    if request_id:
        rows = [r for r in rows if request_id in r.request_ids]
    rows = rows[:limit]
    steps = {r.id: ("-", "") for r in rows} if no_steps else _steps(store, rows)
    if as_json:
        click.echo(json.dumps([dict(r.to_dict(), steps=steps[r.id][0], flow=steps[r.id][1])
                               for r in rows], indent=1))
        return
    table = Table(title=f"traces in {store.state_dir} (newest first)", title_justify="left")
    table.add_column("trace id", no_wrap=True)
    for column in ("started", "operation", "server", "request id", "services", "spans",
                   "steps", "status"):
        table.add_column(column, overflow="fold")
    for row in rows:
        request = row.create_request_id or (row.request_ids[0] if row.request_ids else "-")
        more = len(row.request_ids) - 1 if request in row.request_ids else 0
        table.add_row(row.id, _when(row.start_ns), row.operation, _servers(row),
                      request + (f" (+{more})" if more > 0 else ""),
                      str(len(row.services)), str(row.spans),
                      " ".join(filter(None, steps[row.id])),
                      Text(row.status, style="red" if row.status in ("ERROR", "500") else ""))
    Console(width=max(200, Console().width), **PLAIN).print(table)
    if not rows:
        console.print("no traces match" + ("" if everything else " (--all shows periodic "
                                                                    "work and probes too)"))


@trace_group.command("show")
@selector_options
@click.option("--attributes", "with_attributes", is_flag=True,
              help="Print every span's attributes and events under it.")
def trace_show(state_dir, server, request_id, trace_id, latest, timeout, with_attributes):
    """Print one trace as a tree: offset, duration, service, kind and name of every span."""
    spans, row = select_spans(state_dir=state_dir, server=server, request_id=request_id,
                              trace_id=trace_id, latest=latest, timeout=timeout)
    click.echo(format_tree(Trace.of(spans), with_attributes=with_attributes), nl=False)


def format_tree(trace: Trace, *, with_attributes: bool = False) -> str:
    """The trace as an indented tree, children in start order; with its attributes, each
    span's line ends with its span id (what labs ask to tell one boot's spans)."""
    lines = [f"trace {trace.trace_id}: {len(trace)} spans from {len(trace.services)} services"]

    def walk(span: Span, depth: int) -> None:
        lines.append(f"{trace.offset_ms(span.start_ns):>10.1f} ms {span.duration_ns / 1e6:>9.1f}"
                     f" ms  {'  ' * depth}{span.service} {span.kind} {span.name}"
                     + ("  [ERROR]" if span.status == "ERROR" else "")
                     + (f"  span {span.span_id}" if with_attributes else ""))
        if with_attributes:
            for key, value in sorted(span.attributes.items()):
                lines.append(f"{'':>26}{'  ' * depth}  {key} = {value}")
            for event in span.events:  # the scheduler's filter and weigh, exceptions
                lines.append(f"{'':>26}{'  ' * depth}  event {event.name} at "
                             f"{trace.offset_ms(event.time_ns):.1f} ms")
                for key, value in sorted(event.attributes.items()):
                    lines.append(f"{'':>26}{'  ' * depth}    {key} = {value}")
        for child in trace.children(span):
            walk(child, depth + 1)

    for root in trace.roots:
        walk(root, 0)
    return "\n".join(lines) + "\n"


@trace_group.command("collect")
@selector_options(several_state_dirs=True)
@click.option("-o", "--output", default="trace.json", show_default=True,
              type=click.Path(dir_okay=False), help="The OTLP JSON file to write.")
@click.option("--into", "into", default=None, type=click.Path(file_okay=False),
              help="With several --state-dir: the state directory of the merged store "
                   "(kept, for `trace list`, `diagram`, `novalab web --state-dir`); "
                   "default: a temporary one, removed after.")
def trace_collect(state_dir, server, request_id, trace_id, latest, timeout, output, into):
    """Write one trace from the store as one OTLP JSON document.

    The spans come from every process's file; an openstack CLI boot is
    stitched into one trace (see docs/tracing.md). Services on several hosts
    keep a store each: give every host's state directory (copied to one place
    first), ``--state-dir controller/.novalab-up --state-dir compute-1/.novalab-up``,
    and the trace spans every host.
    """
    import tempfile

    dirs = list(state_dir or ())
    with tempfile.TemporaryDirectory(prefix="novalab-merged-") as scratch:
        if len(dirs) > 1:
            merged = collect.merge_stores(dirs, into or scratch)
            console.print(f"merged {merged.files} span files of {len(dirs)} hosts "
                          f"({', '.join(merged.hosts) or 'no host.name'}) into "
                          f"{merged.root}")
            store_dir = str(merged.root)
        else:
            store_dir = dirs[0] if dirs else None
        spans, row = select_spans(state_dir=store_dir, server=server, request_id=request_id,
                                  trace_id=trace_id, latest=latest, timeout=timeout)
    document = collect.to_document(spans)
    path = collect.write(document, output)
    info = collect.summary(document)
    hosts = f" on hosts {', '.join(info['hosts'])}" if len(info["hosts"]) > 1 else ""
    console.print(f"trace {', '.join(sorted(info['trace_ids']))}: {info['spans']} spans from "
                  f"{len(info['pids'])} processes{hosts} ("
                  + ", ".join(f"{k} {v}" for k, v in sorted(info["services"].items()))
                  + f") -> {path}")


@trace_group.command("stores")
def trace_stores():
    """The trace stores novalab knows (running deployments first)."""
    from novalab.tracing.store import known_stores

    stores = known_stores()
    if not stores:
        console.print("no trace store yet: `novalab boot`, `serve` or `up` makes one")
        sys.exit(1)
    for path, kind, live in stores:
        click.echo(f"{path}  {kind}  {'running' if live else 'stopped'}")


def register(main: click.Group, count_steps: StepCounter | None = None) -> None:
    """Add ``trace``; ``count_steps`` (``diagrams.check.steps_of``) fills its steps
    column: tracing knows no flow table."""
    global _count_steps
    _count_steps = count_steps
    main.add_command(trace_group)

