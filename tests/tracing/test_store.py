"""The trace store: an index kept up to date, boots as rows, traces found by a user's words."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from opentelemetry import trace
from span_files import SECOND, SERVER_ID, cli_session, flush

from novalab.labs.cli import main
from novalab.tracing import store
from novalab.tracing.collect import roots
from novalab.tracing.otlp_json import OtlpJsonLinesExporter
from novalab.tracing.store import NoTrace, TraceStore


@pytest.fixture(autouse=True)
def own_registry(tmp_path, monkeypatch):
    """Each test has its own registry of deployments (never the user's)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(store.ENV_STATE_DIR, raising=False)


def _create_named(processes, name, start, server_id=SERVER_ID, request_id="req-1"):
    """A CLI create whose API span names the server, as nova-api records it."""
    api = processes("nova-api")
    return api.request("POST", "/v2.1/servers", "/v2.1/servers", start, children=[
        ("API._provision_instances", {"nova.instance.uuid": server_id,
                                      "nova.instance.display_name": name,
                                      "openstack.request_id": request_id})])


def test_a_cli_boot_is_one_row_and_other_requests_stay_apart(traces_dir, processes):
    traces = cli_session(processes)
    rows = TraceStore(traces_dir.parent).refresh().rows()
    (boot,) = [r for r in rows if r.kind == "boot"]
    assert boot.stitched and boot.servers == {SERVER_ID: ""}
    assert set(boot.members) == {traces[k] for k in ("discovery", "token", "flavor", "image",
                                                      "create", "poll-1", "poll-2", "read")}
    others = {r.id for r in rows if r.kind == "request"}
    # Another client's poll and a later request are rows of their own; the health probe
    # and the requests the boot stands for are not listed.
    assert others == {traces["old-token"], traces["other-agent"], traces["later"]}
    assert [r.start_ns for r in rows] == sorted((r.start_ns for r in rows), reverse=True)
    everything = {r.id for r in TraceStore(traces_dir.parent).refresh().rows(everything=True)}
    assert {traces["probe"], traces["create"]} <= everything


def test_select_by_server_id_name_request_id_and_latest_give_the_stitched_boot(
        traces_dir, processes):
    cli_session(processes)
    _create_named(processes, "vm1", 300 * SECOND, server_id="11111111-0000-4000-8000-0",
                  request_id="req-vm1")
    flush(processes, "nova-api")
    trace_store = TraceStore(traces_dir.parent)
    by_id = trace_store.select(server=SERVER_ID, timeout=0, settle=0)
    (root,) = roots(by_id.spans)
    assert root.name == "openstack client session (stitched)"
    assert {s.trace_id for s in by_id.spans} == {by_id.row.id}
    by_name = trace_store.select(server="vm1", timeout=0, settle=0)
    assert by_name.row.servers == {"11111111-0000-4000-8000-0": "vm1"}
    assert trace_store.select(request_id="req-vm1", timeout=0, settle=0).row.id == \
        by_name.row.id
    assert trace_store.select(latest=True, timeout=0, settle=0).row.id == by_name.row.id
    assert trace_store.select(trace_id=by_id.row.id, timeout=0, settle=0).row.id == \
        by_id.row.id
    with pytest.raises(NoTrace, match="no trace matches a boot of server 'nope'"):
        trace_store.select(server="nope", timeout=0, settle=0)


def test_two_servers_of_one_name_choose_the_newest_and_say_so(traces_dir, processes):
    _create_named(processes, "twin", 10 * SECOND, server_id="aaaa", request_id="req-a")
    _create_named(processes, "twin", 20 * SECOND, server_id="bbbb", request_id="req-b")
    flush(processes, "nova-api")
    selection = TraceStore(traces_dir.parent).select(server="twin", timeout=0, settle=0)
    assert selection.row.servers == {"bbbb": "twin"}
    assert "2 boots of a server named 'twin'" in selection.note and "aaaa" in selection.note


def test_the_index_reads_only_what_was_appended(traces_dir, processes):
    cli_session(processes)
    trace_store = TraceStore(traces_dir.parent).refresh()
    before = {tid: s.spans for tid, s in trace_store.summaries.items()}
    offsets = json.loads(trace_store.index_path.read_text())["files"]
    assert sum(f["offset"] for f in offsets.values()) == \
        sum(p.stat().st_size for p in traces_dir.glob("*.jsonl"))
    # Nothing new: refreshing again counts nothing twice.
    assert {t: s.spans for t, s in TraceStore(traces_dir.parent).refresh().summaries.items()} \
        == before
    _create_named(processes, "late", 400 * SECOND, server_id="cccc")
    flush(processes, "nova-api")
    after = TraceStore(traces_dir.parent).refresh().summaries
    assert len(after) == len(before) + 1
    assert all(after[t].spans == n for t, n in before.items())


def test_a_half_written_line_waits_for_its_end(traces_dir):
    path = traces_dir / "nova-api.jsonl"
    exporter = OtlpJsonLinesExporter(path)
    provider_spans = _finished_spans(2)
    exporter.export(provider_spans[:1])
    line = path.read_text()
    exporter.shutdown()
    path.write_text(line + line[:40])  # a writer is in the middle of its next line
    trace_store = TraceStore(traces_dir.parent).refresh()
    assert sum(s.spans for s in trace_store.summaries.values()) == 1
    with open(path, "a") as handle:
        handle.write(line[40:])
    trace_store = TraceStore(traces_dir.parent).refresh()
    # The same span, exported twice, is one span of its trace when read.
    assert trace_store.spans(trace_store.summaries) and \
        len(trace_store.spans(trace_store.summaries)) == 1


def _finished_spans(count):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for index in range(count):
        tracer.start_span(f"span {index}", kind=trace.SpanKind.SERVER).end()
    return memory.get_finished_spans()


def test_rotation_keeps_segments_readable_and_prunes_the_oldest(traces_dir):
    path = traces_dir / "serve.jsonl"
    exporter = OtlpJsonLinesExporter(path, segment_bytes=1, keep_segments=2)
    spans = _finished_spans(5)
    for index in range(5):
        exporter.export(spans[index:index + 1])
        TraceStore(traces_dir.parent).refresh()  # the index follows the renames
    exporter.shutdown()
    assert len(exporter.segments()) == 2  # every write rotated; only the newest 2 kept
    trace_store = TraceStore(traces_dir.parent).refresh()
    names = {s.root_span.name for s in trace_store.summaries.values()}
    assert names == {"span 3", "span 4"}  # pruned segments' traces left the index
    assert all(s.spans == 1 for s in trace_store.summaries.values())


def test_segments_older_than_the_age_limit_are_pruned(traces_dir):
    old = traces_dir / "serve.20200101T000000.000000Z.jsonl"
    old.write_text("")
    os.utime(old, (0, 0))
    OtlpJsonLinesExporter(traces_dir / "serve.jsonl").shutdown()
    assert not old.exists()


def test_locate_prefers_explicit_then_env_then_the_registry(tmp_path, monkeypatch):
    with pytest.raises(NoTrace, match="no trace store found"):
        store.locate()
    older, newer = tmp_path / "older", tmp_path / "newer"
    for state in (older, newer):
        (state / "traces").mkdir(parents=True)
        (state / "traces" / "boot.jsonl").write_text("")
        store.register(state, "boot")
    assert store.locate() == newer.absolute()
    # A running deployment wins over a newer stopped one.
    (older / "run").mkdir()
    (older / "run" / "serve.pid").write_text(str(os.getpid()))
    assert store.locate() == older.absolute()
    monkeypatch.setenv(store.ENV_STATE_DIR, str(newer))
    assert store.locate() == newer
    assert store.locate(tmp_path / "x") == tmp_path / "x"


def test_trace_list_and_selectors_on_the_command_line(traces_dir, processes):
    cli_session(processes)
    _create_named(processes, "vm1", 300 * SECOND, server_id="dddd", request_id="req-vm1")
    flush(processes, "nova-api", "keystone", "glance-api")
    state = str(traces_dir.parent)
    runner = CliRunner()
    listed = runner.invoke(main, ["trace", "list", "--state-dir", state, "--json",
                                  "--no-steps"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert rows[0]["servers"] == [{"id": "dddd", "name": "vm1"}]
    only = runner.invoke(main, ["trace", "list", "--state-dir", state, "--json", "--no-steps",
                                "--request-id", "req-vm1"])
    assert [r["trace_id"] for r in json.loads(only.output)] == [rows[0]["trace_id"]]
    shown = runner.invoke(main, ["trace", "show", "--state-dir", state, "--server", SERVER_ID,
                                 "--timeout", "0"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines()[1].endswith("openstack client session (stitched)")
    out = traces_dir.parent / "one.json"
    collected = runner.invoke(main, ["trace", "collect", "--state-dir", state, "--server", "vm1",
                                     "--timeout", "0", "-o", str(out)])
    assert collected.exit_code == 0, collected.output
    assert {s["traceId"] for rs in json.loads(out.read_text())["resourceSpans"]
            for ss in rs["scopeSpans"] for s in ss["spans"]} == {rows[0]["trace_id"]}
    missing = runner.invoke(main, ["trace", "show", "--state-dir", state, "--server", "nope",
                                   "--timeout", "0"])
    assert missing.exit_code == 1 and "no trace matches" in missing.output
    both = runner.invoke(main, ["trace", "show", "--state-dir", state, "--latest",
                                "--server", "vm1"])
    assert both.exit_code == 2 and "exactly one" in both.output
    bad_since = runner.invoke(main, ["trace", "list", "--state-dir", state, "--since", "soon"])
    assert bad_since.exit_code == 2 and "duration" in bad_since.output



def test_trace_list_checks_each_boot_once_until_it_grows(traces_dir, processes, monkeypatch):
    """The flow-check column is kept in the index with the span count it was made at."""
    _create_named(processes, "vm1", 300 * SECOND, server_id="eeee")
    flush(processes, "nova-api")
    state = str(traces_dir.parent)
    first = CliRunner().invoke(main, ["trace", "list", "--state-dir", state, "--json"])
    (row,) = json.loads(first.output)
    assert row["steps"].count("/") == 1

    import novalab.diagrams.check as check_module

    def no_second_check(*_args, **_kwargs):
        raise AssertionError("the flow check ran again for an unchanged boot")

    monkeypatch.setattr(check_module, "check", no_second_check)
    again = CliRunner().invoke(main, ["trace", "list", "--state-dir", state, "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)[0]["steps"] == row["steps"]
    # More spans of that boot arrive: the cached value no longer holds.
    api = processes("nova-api")
    trace_store = TraceStore(state).refresh()
    create = next(s for s in trace_store.spans(trace_store.rows()[0].members)
                  if s.name == "POST /v2.1/servers")
    late = api.tracer.start_span("late", context=trace.set_span_in_context(
        trace.NonRecordingSpan(trace.SpanContext(
            int(create.trace_id, 16), int(create.span_id, 16), is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))))
    late.end()
    flush(processes, "nova-api")
    grown = CliRunner().invoke(main, ["trace", "list", "--state-dir", state, "--json"])
    assert grown.exit_code != 0 and "ran again" in str(grown.exception)


def test_export_jaeger_takes_several_boots_from_the_store(traces_dir, processes, tmp_path):
    _create_named(processes, "vm1", 300 * SECOND, server_id="f001", request_id="req-1")
    _create_named(processes, "vm2", 400 * SECOND, server_id="f002", request_id="req-2")
    flush(processes, "nova-api")
    out = tmp_path / "two.jaeger.json"
    done = CliRunner().invoke(main, ["export", "jaeger", "--state-dir", str(traces_dir.parent),
                                     "--server", "vm1", "--request-id", "req-2", "--timeout",
                                     "0", "-o", str(out)])
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())["data"]
    rows = {r.id for r in TraceStore(traces_dir.parent).refresh().rows()}
    assert len(data) == 2 and {t["traceID"] for t in data} == rows
    since = CliRunner().invoke(main, ["export", "jaeger", "--state-dir",
                                      str(traces_dir.parent), "--since", "1d", "-o", str(out)])
    assert since.exit_code == 1 and "no trace since 1d" in since.output  # spans from 1970


def test_select_waits_for_a_trace_not_yet_written(traces_dir, processes):
    """A request answered a moment ago may not be in any file yet (batches every 0.5 s):
    selecting it waits, within the timeout, instead of failing at once."""
    import threading

    def later():
        _create_named(processes, "soon", 10 * SECOND, server_id="5005", request_id="req-soon")
        flush(processes, "nova-api")

    timer = threading.Timer(0.3, later)
    timer.start()
    try:
        selection = TraceStore(traces_dir.parent).select(request_id="req-soon", timeout=10,
                                                        settle=0.05)
    finally:
        timer.join()
    assert selection.row.servers == {"5005": "soon"}
    with pytest.raises(NoTrace):
        TraceStore(traces_dir.parent).select(request_id="req-never", timeout=0.2, settle=0.05)


def test_a_create_without_wait_does_not_take_the_next_boot_as_its_own(traces_dir, processes):
    """Reproduces a bug: `server create` (no --wait), then a second create seconds later
    with --wait; the first boot's row named both servers and took the other's polls."""
    api = processes("nova-api")
    first = "aaaaaaaa-0000-4000-8000-000000000001"
    second = "bbbbbbbb-0000-4000-8000-000000000002"
    _create_named(processes, "one", 100 * SECOND, server_id=first, request_id="req-one")
    _create_named(processes, "two", 102 * SECOND, server_id=second, request_id="req-two")
    for at in (103, 104):
        api.request("GET", "/v2.1/servers/<server_id>", f"/v2.1/servers/{second}", at * SECOND,
                    children=[("poll", {"nova.instance.uuid": second,
                                        "nova.instance.vm_state": "active"})])
    flush(processes, "nova-api")
    rows = {tuple(r.servers): r for r in TraceStore(traces_dir.parent).refresh().rows()
            if r.kind == "boot"}
    assert set(rows) == {(first,), (second,)}
    assert rows[(first,)].status == "BUILD" or rows[(first,)].status == "?"
    assert rows[(second,)].status == "ACTIVE"
    polls = TraceStore(traces_dir.parent).select(server=second, timeout=0, settle=0)
    assert len([s for s in polls.spans if s.name == "poll"]) == 2
    assert not any(s.name == "poll" for s in TraceStore(traces_dir.parent).select(
        server=first, timeout=0, settle=0).spans)


def _mode(path) -> int:
    return path.stat().st_mode & 0o777


def test_only_the_owner_may_read_the_stores_files(tmp_path):
    """Issue 21, finding 10: trace files were 0644, so any local user read every trace
    (and the guest addresses in them) from disk."""
    state = tmp_path / "state"
    exporter = OtlpJsonLinesExporter(state / "traces" / "serve.jsonl", segment_bytes=1)
    exporter.export(_finished_spans(1))
    exporter.export(_finished_spans(1))  # the first segment was rotated: a new file
    exporter.shutdown()
    TraceStore(state).refresh()
    files = sorted(p for p in (state / "traces").iterdir())
    assert len([p for p in files if p.suffix == ".jsonl"]) >= 2
    assert {p.name: _mode(p) for p in files} == dict.fromkeys((p.name for p in files), 0o600)
    assert _mode(state / "traces") == 0o700


def test_a_trace_file_is_the_owners_only(tmp_path):
    from novalab.tracing.collect import write
    from novalab.tracing.otlp_json import write_trace_file

    assert _mode(write_trace_file(tmp_path / "out" / "trace.json", _finished_spans(1))) == 0o600
    assert _mode(write(json.loads((tmp_path / "out" / "trace.json").read_text()),
                       tmp_path / "collected.json")) == 0o600
