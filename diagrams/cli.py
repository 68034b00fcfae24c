"""Command-line side of ``novalab.diagrams``: ``flow check``, ``diagram``, ``export jaeger``.

The ``novalab`` command lives in ``labs/cli.py``; it adds these with one line,
``register(main)``::

    novalab flow check [TRACE] [--flow NAME] [--format text|json] [SELECTOR]
    novalab flow compare [--classic TRACE] [--modern TRACE] [--format text|html] [-o FILE]
    novalab diagram [TRACE] --kind sequence --format svg|html|mermaid|plantuml [--full] -o FILE
    novalab diagram [TRACE] --kind callgraph --format svg|png|dot -o FILE
    novalab export jaeger [TRACE] -o FILE
    novalab web [--state-dir DIR] [--host 127.0.0.1] [--port 8700]

TRACE is OTLP JSON, OTLP JSON lines or Jaeger JSON; with several traces in one
file the largest is used unless ``--trace-id`` says which. Without TRACE, a
SELECTOR (``--server ID|NAME``, ``--request-id REQ``, ``--trace-id ID``,
``--latest``, optionally ``--state-dir``) finds the trace in a deployment's
trace store (``novalab.tracing.store``). Without ``--flow``, ``flow check`` and
``diagram`` project the trace onto the flow table it shows
(``novalab.diagrams.flows.detect``); the text report says why. Exit codes: 0 done
(for ``flow check``: every step matched, in order), 1 the flow check found
missing or out-of-order steps, 2 the input could not be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from novalab.diagrams.flows import FLOWS

SEQUENCE_FORMATS = ("svg", "html", "mermaid", "plantuml")
CALLGRAPH_FORMATS = ("svg", "png", "dot")


class InputError(click.ClickException):
    exit_code = 2


def _trace(path: str | None, trace_id: str | None, *, state_dir=None, server=None,
           request_id=None, latest=False, timeout=10.0, flow_name=None):
    """The trace a command works on: from a TRACE file, or from the trace store.

    With a file, ``--trace-id`` picks one of its traces (default: the largest).
    Without one, the selectors name a trace in the running or last deployment's
    store (or ``--state-dir``'s), as ``novalab trace list`` shows them; a flow
    with its own ``select`` (shelve: a server's shelve and unshelve requests,
    joined) finds its trace for ``--server`` and ``--request-id`` itself.
    """
    from novalab.diagrams.load import TraceFormatError, load_trace

    if path is None:
        if not any((server, request_id, trace_id, latest)):
            raise click.UsageError("give a TRACE file, or choose a trace in the store with "
                                   "--server, --request-id, --trace-id or --latest")
        from novalab.tracing.cli import SelectionError, open_store, select_spans

        flow = None
        if flow_name is not None and (server or request_id):
            from novalab.diagrams.flows import get_flow

            flow = get_flow(flow_name)
        if flow is not None and flow.select is not None:
            from novalab.tracing.store import NoTrace

            try:
                return load_trace(flow.select(open_store(state_dir), server=server,
                                              request_id=request_id, timeout=timeout))
            except NoTrace as exc:
                raise SelectionError(str(exc)) from exc

        spans, _row = select_spans(state_dir=state_dir, server=server, request_id=request_id,
                                   trace_id=trace_id, latest=latest, timeout=timeout)
        return load_trace(spans)
    if server or request_id or latest or state_dir:
        raise click.UsageError("--server, --request-id, --latest and --state-dir choose a trace "
                               "in the trace store: drop the TRACE file argument to use them")
    try:
        return load_trace(path, trace_id)
    except TraceFormatError as exc:
        raise InputError(str(exc)) from exc


def _source(func):
    """The optional TRACE argument and the store's selectors, for every command here."""
    from novalab.tracing.cli import selector_options

    func = selector_options(func)
    return click.argument("trace_file", required=False, type=click.Path(dir_okay=False))(func)


def _write(output: str | None, data: str | bytes) -> None:
    if output in (None, "-"):
        if isinstance(data, bytes):
            raise click.UsageError("binary output (png) needs -o FILE")
        click.echo(data, nl=False)
        return
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    click.echo(f"wrote {path}", err=True)


_FLOW = click.option("--flow", "flow_name", default=None, type=click.Choice(sorted(FLOWS)),
                     help="The flow table to project onto. Default: the one the trace "
                          "shows (a span only that flow's chain makes; classic when no "
                          "other flow recognises the trace).")


def _pick(trace, flow_name: str | None):
    """``(Flow, why)``: the flow named by --flow (why ""), else the one the trace shows."""
    from novalab.diagrams.flows import detect, get_flow

    if flow_name is not None:
        return get_flow(flow_name), ""
    name, why = detect(trace)
    return get_flow(name), why


@click.group("flow")
def flow_group():
    """Project a trace onto a flow table (classic: the 58 steps; see --flow)."""


@flow_group.command("check")
@_source
@_FLOW
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def flow_check(trace_file, flow_name, fmt, **selectors):
    """List every step as matched (span, service, time) or MISSING, and flag steps out of
    causal order. Exits 0 only when all steps match, in order.

    TRACE is a trace file; without it, --server NAME (or --request-id, --trace-id,
    --latest) finds the trace in the running or last deployment's trace store.
    Without --flow, the table is the one the trace shows (the report says why)."""
    from novalab.diagrams.check import check, format_text, to_dict

    trace = _trace(trace_file, flow_name=flow_name, **selectors)
    flow, picked = _pick(trace, flow_name)
    result = check(trace, flow)
    if fmt == "json":
        click.echo(json.dumps(to_dict(result, picked), indent=1, sort_keys=True))
    else:
        click.echo(format_text(result, picked), nl=False)
    sys.exit(0 if result.ok else 1)


@flow_group.command("compare")
@click.option("--classic", "classic_file", default=None, type=click.Path(dir_okay=False),
              metavar="TRACE", help="A classic boot's trace: each classic step shows its span.")
@click.option("--modern", "modern_file", default=None, type=click.Path(dir_okay=False),
              metavar="TRACE", help="A modern boot's trace (`novalab boot --topology modern`): "
                                    "each modern step shows its span.")
@click.option("--format", "fmt", type=click.Choice(["text", "html"]), default="text",
              show_default=True)
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="File to write (default: standard output).")
def flow_compare(classic_file, modern_file, fmt, output):
    """The classic 58 steps beside today's boot (the modern table), and what moved: who
    calls the scheduler, where the instance row is first written, who claims the
    resources in placement, who sends the build to the host.

    Without traces it lines up the two tables; with --classic and --modern TRACE files
    every step also shows the span that stood for it in that boot, and each question
    is answered from the traces (service and span id)."""
    from novalab.diagrams import compare
    from novalab.diagrams.check import check
    from novalab.diagrams.flows import detect, get_flow

    checks = {}
    for name, path in (("classic", classic_file), ("modern", modern_file)):
        if path is None:
            continue
        trace = _trace(path, None)
        shows, _why = detect(trace)
        if shows != name:
            click.echo(f"warning: {path} looks like a {shows} boot, not a {name} one", err=True)
        checks[name] = check(trace, get_flow(name))
    result = compare.compare(checks.get("classic"), checks.get("modern"))
    _write(output, compare.render_html(result) if fmt == "html" else compare.render_text(result))


@click.command("diagram")
@_source
@click.option("--kind", type=click.Choice(["sequence", "callgraph"]), default="sequence",
              show_default=True,
              help="A sequence diagram of the flow's steps, or a call graph of components.")
@click.option("--format", "fmt", type=click.Choice(sorted(set(SEQUENCE_FORMATS) |
                                                          set(CALLGRAPH_FORMATS))),
              default="svg", show_default=True,
              help=f"sequence: {'|'.join(SEQUENCE_FORMATS)}; "
                   f"callgraph: {'|'.join(CALLGRAPH_FORMATS)}.")
@click.option("--full", is_flag=True,
              help="Sequence of every hop between services, not the flow's steps.")
@_FLOW
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="File to write (default: standard output, text formats only).")
def diagram(trace_file, kind, fmt, full, flow_name, output, **selectors):
    """Draw a trace: a sequence diagram (the flow's steps, or --full) or a call graph.

    TRACE is a trace file; without it, --server NAME (or another selector) finds
    the trace in the trace store."""
    allowed = SEQUENCE_FORMATS if kind == "sequence" else CALLGRAPH_FORMATS
    if fmt not in allowed:
        raise click.UsageError(f"--kind {kind} supports --format {', '.join(allowed)}")
    trace = _trace(trace_file, flow_name=flow_name, **selectors)
    if kind == "callgraph":
        from novalab.diagrams import callgraph

        _write(output, callgraph.render(trace, fmt))
        return
    from novalab.diagrams import sequence

    flow, _why = _pick(trace, flow_name)
    if full:
        model = sequence.from_trace(trace, flow)
    else:
        from novalab.diagrams.check import check

        model = sequence.from_check(check(trace, flow))
    _write(output, sequence.render(model, fmt))


@click.group("export")
def export_group():
    """Convert a trace for other tools."""


@export_group.command("jaeger")
@click.argument("trace_file", required=False, type=click.Path(dir_okay=False))
@click.option("--state-dir", default=None, type=click.Path(file_okay=False),
              help="The deployment's state directory (default: the running or last one).")
@click.option("--server", "servers", multiple=True, metavar="ID|NAME",
              help="The boot of this server; repeat for several.")
@click.option("--request-id", "request_ids", multiple=True, metavar="REQ",
              help="The trace of this request id; repeat for several.")
@click.option("--trace-id", "trace_ids", multiple=True,
              help="A trace id (of the TRACE file, or in the store); repeat for several.")
@click.option("--latest", is_flag=True, help="The latest boot (else request).")
@click.option("--since", default=None, metavar="WHEN",
              help="Every trace `trace list` shows since then (30s, 10m, 2h, 1d, ISO time).")
@click.option("--timeout", default=10.0, show_default=True,
              help="Seconds to wait for a trace that is still arriving.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The Jaeger JSON file to write (open it in Jaeger's UI: JSON File).")
def export_jaeger(trace_file, state_dir, servers, request_ids, trace_ids, latest, since,
                  timeout, output):
    """Write traces as one Jaeger JSON file (the UI's "JSON File" upload takes many).

    From a TRACE file: every trace in it, or the --trace-id ones. From the trace
    store: every trace the selectors name (repeat them), or all since --since."""
    from novalab.diagrams.jaeger import write_jaeger
    from novalab.diagrams.load import TraceFormatError, load_traces

    if trace_file is not None:
        if servers or request_ids or latest or since or state_dir:
            raise click.UsageError("--server, --request-id, --latest, --since and --state-dir "
                                   "choose traces in the trace store: drop the TRACE file "
                                   "argument to use them")
        try:
            traces = load_traces(trace_file)
        except TraceFormatError as exc:
            raise InputError(str(exc)) from exc
        if trace_ids:
            wanted = {t.lower() for t in trace_ids}
            traces = [t for t in traces if t.trace_id in wanted]
            missing = wanted - {t.trace_id for t in traces}
            if missing:
                raise InputError(f"{trace_file}: no trace {', '.join(sorted(missing))}")
    else:
        traces = _store_traces(state_dir, servers, request_ids, trace_ids, latest, since,
                               timeout)
    path = write_jaeger(traces, output)
    click.echo(f"wrote {path} ({len(traces)} trace{'s' if len(traces) != 1 else ''})",
               err=True)


def _store_traces(state_dir, servers, request_ids, trace_ids, latest, since, timeout):
    """The traces the (repeatable) selectors name in the trace store, in the order given."""
    from novalab.diagrams.load import load_trace
    from novalab.tracing.cli import open_store, parse_since, select_spans

    words = ([{"server": s} for s in servers] + [{"request_id": r} for r in request_ids]
             + [{"trace_id": t} for t in trace_ids] + ([{"latest": True}] if latest else []))
    if not words and not since:
        raise click.UsageError("give a TRACE file, or choose traces with --server, "
                               "--request-id, --trace-id, --latest or --since")
    traces, seen = [], set()
    for word in words:
        spans, row = select_spans(state_dir=state_dir, timeout=timeout, **word)
        if row.id not in seen:
            seen.add(row.id)
            traces.append(load_trace(spans))
    if since:
        store = open_store(state_dir).refresh()
        since_ns = parse_since(since)
        rows = [r for r in store.rows() if r.start_ns >= since_ns and r.id not in seen]
        for row in rows:
            spans = store.load(row)
            if spans:
                traces.append(load_trace(spans))
    if not traces:
        raise click.ClickException(f"no trace since {since}")
    return traces


@click.command("web")
@click.option("--state-dir", default=None, type=click.Path(file_okay=False),
              help="The deployment's state directory (default: the running or last "
                   "deployment novalab started, else .novalab).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@click.option("--require-auth", is_flag=True,
              help="Ask for a keystone token even on loopback (always asked elsewhere).")
@click.option("--auth-url", default=None,
              help="The keystone to ask (default: the deployment's, from its state dir).")
def web(state_dir, host, port, require_auth, auth_url):
    """Serve the trace page: the traces as they arrive, and each one as a sequence
    diagram, flow check, timeline and call graph. Runs until Ctrl-C.

    Fully offline (nothing is fetched from the network); see docs/web.md."""
    from novalab.diagrams import web as web_app
    from novalab.tracing.store import NoTrace, locate

    try:
        state = locate(state_dir)
    except NoTrace:
        state = Path(".novalab")  # `novalab serve`'s default: the page waits for traces
    try:
        web_app.serve(state, host, port, on_ready=lambda server: click.echo(
            f"novalab web: {web_app.page_url(server)}  (traces in {state / 'traces'}; "
            "Ctrl-C to stop)"), require_auth=require_auth, auth_url=auth_url)
    except OSError as exc:
        raise InputError(str(exc)) from exc


COMMANDS = (flow_group, diagram, export_group, web)


def register(main: click.Group) -> None:
    """Add ``flow``, ``diagram``, ``export`` and ``web`` to the ``novalab`` command."""
    for command in COMMANDS:
        main.add_command(command)
