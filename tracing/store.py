"""The trace store: every deployment's spans in its state dir, found the way a user thinks.

``novalab boot``, ``serve`` and ``up`` keep their spans in one layout::

    STATE_DIR/traces/<unit>.jsonl             one process's spans, OTLP JSON lines
    STATE_DIR/traces/<unit>.<time>Z.jsonl     its rotated segments (see otlp_json)
    STATE_DIR/traces/index.json               what `novalab trace list` knows

A *unit* is one process (``serve``, ``boot``, ``nova-compute-compute-1``,
``novalab-client``). The index is brought up to date incrementally: it keeps,
for every file, how many bytes it has read, and for every trace a summary
(start, end, span count, services, its root span, the servers and request
ids it names, whether it created a server). Listing a store re-reads only what
was appended since.

A user does not think in trace ids. The ``openstack`` CLI starts a new trace
for every request it sends, so one ``server create --wait`` is a dozen traces;
the store turns each create into one *boot* (stitched, see ``stitch.py``, when
the client was not traced) and lists it with the server's name and id and
every request id, beside the other requests users made. Periodic work and
health probes are kept but not listed unless asked.

Which store? ``locate`` answers: an explicit ``--state-dir``, else
``$NOVALAB_STATE_DIR``, else the deployments novalab has started (a small
registry under ``$XDG_STATE_HOME/novalab``), running ones first, newest first.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from novalab.tracing import attributes as attr
from novalab.tracing import stitch
from novalab.tracing.collect import incomplete, started_by_request, trace_files
from novalab.tracing.model import Span
from novalab.tracing.otlp_json import spans_from_lines, spans_from_otlp, spans_to_otlp
from novalab.tracing.private import open_private, private_dir, write_private

INDEX_VERSION = 2
ENV_STATE_DIR = "NOVALAB_STATE_DIR"


class NoTrace(LookupError):
    """No trace matches what was asked; the message says what the store does hold."""


# -- summaries of raw traces ------------------------------------------------------------------

def _encode_one(span: Span) -> dict:
    """One span as a tiny OTLP document, so the index can hold it and give it back."""
    return spans_to_otlp([span])


def _decode_one(doc: dict) -> Span:
    return spans_from_otlp(doc, "trace index")[0]


@dataclass
class TraceSummary:
    """What the index keeps of one trace id as its spans arrive (in any order)."""

    trace_id: str
    start_ns: int = 0
    end_ns: int = 0
    spans: int = 0
    services: list[str] = field(default_factory=list)
    root: dict | None = None       # the parentless span, encoded
    create: dict | None = None     # nova-api's POST /servers SERVER span, encoded
    servers: dict[str, str] = field(default_factory=dict)  # uuid -> display name ("")
    request_ids: list[str] = field(default_factory=list)
    create_request_id: str = ""    # the request id of the create (what server event list shows)
    # uuid -> [time, vm_state]: the last state recorded of each server the trace names
    vm_states: dict[str, list] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def add(self, span: Span, file_key: str) -> None:
        self.start_ns = min(self.start_ns or span.start_ns, span.start_ns)
        self.end_ns = max(self.end_ns, span.end_ns)
        self.spans += 1
        if span.service not in self.services:
            self.services.append(span.service)
        if span.parent_id is None and self.root is None:
            self.root = _encode_one(span)
        if self.create is None and stitch.is_create(span):
            self.create = _encode_one(span)
            self.create_request_id = str(span.get(attr.OPENSTACK_REQUEST_ID) or "")
        uuid = span.get(attr.NOVA_INSTANCE_UUID)
        # The state the last-started span saw or wrote (the conductor's final
        # instance_update starts after every span that saw the instance building).
        state = span.get(attr.NOVA_VM_STATE)
        if state and uuid:
            known = self.vm_states.get(str(uuid))
            if not known or span.start_ns >= known[0]:
                self.vm_states[str(uuid)] = [span.start_ns, str(state)]
        if uuid:
            name = span.get(attr.NOVA_INSTANCE_DISPLAY_NAME) or span.get(attr.NOVALAB_SERVER_NAME)
            if name or uuid not in self.servers:
                self.servers[str(uuid)] = str(name or self.servers.get(str(uuid), ""))
        request_id = span.get(attr.OPENSTACK_REQUEST_ID)
        if request_id and request_id not in self.request_ids:
            self.request_ids.append(str(request_id))
        if file_key not in self.files:
            self.files.append(file_key)

    @property
    def root_span(self) -> Span | None:
        return _decode_one(self.root) if self.root else None

    @property
    def create_span(self) -> Span | None:
        return _decode_one(self.create) if self.create else None

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict) -> TraceSummary:
        return cls(**data)


# -- what `trace list` shows ------------------------------------------------------------------

@dataclass
class Row:
    """One line of ``novalab trace list``: a boot (maybe stitched) or another request."""

    id: str                        # the trace id to ask for (stitched id for a CLI boot)
    kind: str                      # "boot" or "request"
    start_ns: int
    end_ns: int
    operation: str                 # the root's name ("openstack server create", "GET /v3")
    servers: dict[str, str]
    request_ids: list[str]
    services: list[str]
    spans: int
    status: str                    # a boot: the server's last vm_state; a request: its answer
    members: list[str]             # the raw trace ids it is made of
    stitched: bool = False
    create_request_id: str = ""    # a boot: the request id of its POST /servers

    def to_dict(self) -> dict:
        return {"trace_id": self.id, "kind": self.kind, "start_unix_nano": self.start_ns,
                "end_unix_nano": self.end_ns, "operation": self.operation,
                "servers": [{"id": k, "name": v} for k, v in self.servers.items()],
                "request_ids": self.request_ids, "services": self.services,
                "spans": self.spans, "status": self.status, "members": self.members,
                "stitched": self.stitched, "create_request_id": self.create_request_id}


@dataclass
class Selection:
    """A trace chosen by a user's words, with its spans (one trace id)."""

    row: Row
    spans: list[Span]
    note: str = ""   # e.g. "3 servers are named vm1; the newest was chosen"

    @property
    def trace_id(self) -> str:
        return self.spans[0].trace_id if self.spans else self.row.id


def _status(kind: str, parts: list[TraceSummary], servers: dict[str, str]) -> str:
    """A boot's server state as Nova's API words it, from the last ``vm_state`` its spans
    recorded of its own server; a request's HTTP status code (or the root span's status)."""
    if kind == "boot":
        states = [p.vm_states[uuid] for p in parts for uuid in servers if uuid in p.vm_states]
        state = max(states)[1] if states else ""
        return {"active": "ACTIVE", "error": "ERROR", "building": "BUILD",
                "deleted": "DELETED"}.get(state, state.upper() or "?")
    root = next((p.root_span for p in parts if p.root), None)
    if root is None:
        return "?"
    code = root.get(attr.HTTP_RESPONSE_STATUS_CODE)
    return str(code) if code else ("ERROR" if root.status == "ERROR" else "OK")


# -- the store ---------------------------------------------------------------------------------

class TraceStore:
    """The trace store of one state directory."""

    def __init__(self, state_dir: str | os.PathLike):
        self.state_dir = Path(state_dir)
        self.traces_dir = self.state_dir / "traces"
        self.index_path = self.traces_dir / "index.json"
        self.summaries: dict[str, TraceSummary] = {}
        self._offsets: dict[str, dict] = {}
        # Derived facts about rows (e.g. `trace list`'s flow-check column), each kept
        # with the span count it was computed at: valid until more spans arrive.
        self._derived: dict[str, list] = {}

    def exists(self) -> bool:
        return bool(trace_files(self.traces_dir))

    # The index -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        private_dir(self.traces_dir)
        with open_private(self.traces_dir / ".index.lock") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load_index(self) -> None:
        try:
            data = json.loads(self.index_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            data = {}
        if data.get("version") != INDEX_VERSION:
            data = {}
        self._offsets = data.get("files", {})
        self._derived = data.get("derived", {})
        self.summaries = {tid: TraceSummary.from_dict(item)
                          for tid, item in data.get("traces", {}).items()}

    def _save_index(self) -> None:
        data = {"version": INDEX_VERSION, "files": self._offsets, "derived": self._derived,
                "traces": {tid: s.to_dict() for tid, s in self.summaries.items()}}
        write_private(self.index_path, json.dumps(data, separators=(",", ":")))

    def refresh(self) -> TraceStore:
        """Read what the processes appended since the last refresh; forget pruned files."""
        with self._locked():
            self._load_index()
            seen: set[str] = set()
            for path in trace_files(self.traces_dir):
                try:
                    stat = path.stat()
                except FileNotFoundError:
                    continue
                # Keyed by inode: a rotated segment keeps its inode, so its bytes
                # are not read twice under its new name.
                key = f"{stat.st_dev}:{stat.st_ino}"
                seen.add(key)
                known = self._offsets.get(key, {"offset": 0})
                if known.get("offset", 0) > stat.st_size:
                    known = {"offset": 0}  # a new file on a reused inode
                if stat.st_size > known["offset"]:
                    known = {"offset": self._read_from(path, key, known["offset"])}
                self._offsets[key] = dict(known, name=path.name)
            gone = set(self._offsets) - seen
            for key in gone:
                del self._offsets[key]
            if gone:
                self.summaries = {tid: s for tid, s in self.summaries.items()
                                  if set(s.files) - gone}
                self._derived = {k: v for k, v in self._derived.items()
                                 if v[0] in self.summaries or k in self.summaries}
            self._save_index()
        return self

    def _read_from(self, path: Path, key: str, offset: int) -> int:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
        complete = data.rfind(b"\n") + 1  # a last line still being written waits
        lines = data[:complete].decode("utf-8", errors="replace").splitlines()
        for span in spans_from_lines(lines, str(path)):
            summary = self.summaries.get(span.trace_id)
            if summary is None:
                summary = self.summaries[span.trace_id] = TraceSummary(span.trace_id)
            summary.add(span, key)
        return offset + complete

    def derived(self, row: Row, kind: str) -> str | None:
        """A fact computed earlier for ``row`` (e.g. its steps), if no span came since."""
        known = self._derived.get(f"{kind}:{row.id}")
        return known[2] if known and known[1] == row.spans else None

    def remember(self, facts: Iterable[tuple[Row, str, str]]) -> None:
        """Keep facts ``(row, kind, value)`` in the index, each valid for the row's span
        count."""
        with self._locked():
            # Update the newest index on disk (another reader may have refreshed it since
            # ours); offsets and summaries on disk always go together, so ours stay ours.
            offsets, summaries = self._offsets, self.summaries
            self._load_index()
            self._derived.update({f"{kind}:{row.id}": [row.members[0], row.spans, value]
                                  for row, kind, value in facts})
            self._save_index()
            self._offsets, self.summaries = offsets, summaries

    # Reading spans --------------------------------------------------------------------------

    def spans(self, trace_ids: Iterable[str]) -> list[Span]:
        """Every span of ``trace_ids`` (raw ids, as the processes wrote them)."""
        wanted = set(trace_ids)
        spans: list[Span] = []
        for path in trace_files(self.traces_dir):
            try:
                with open(path, encoding="utf-8") as handle:
                    spans.extend(spans_from_lines(handle, str(path), wanted))
            except FileNotFoundError:
                continue
        unique = {(s.trace_id, s.span_id): s for s in spans}  # a batch exported twice
        return list(unique.values())

    # Rows -----------------------------------------------------------------------------------

    def rows(self, *, everything: bool = False) -> list[Row]:
        """Boots and requests, newest first. ``everything`` adds periodic work, health
        probes and the requests a boot's row already stands for."""
        roots = [s for s in (t.root_span for t in self.summaries.values()) if s is not None]
        rows: list[Row] = []
        absorbed: set[str] = set()
        for summary in self.summaries.values():
            create = summary.create_span
            if create is None or not summary.servers:
                continue
            server_id = next(iter(summary.servers))
            if create.parent_id is None:
                chosen = stitch.session(roots, create, server_id)
                members = [root.trace_id for root, _, _ in chosen]
                row_id, _ = stitch.stitched_ids(server_id, create)
                root_name, stitched = stitch.STITCHED_ROOT, True
            else:
                members, row_id, stitched = [summary.trace_id], summary.trace_id, False
                root = summary.root_span
                root_name = root.name if root else create.name
            # The boot's servers are the ones its create made; its members may also
            # name others (a read of another server in the same CLI session).
            rows.append(self._row(row_id, "boot", root_name, members, stitched,
                                  servers=dict(summary.servers)))
            absorbed.update(members)
        for summary in self.summaries.values():
            if summary.trace_id in absorbed:
                continue
            root = summary.root_span
            if not everything and (root is None or not started_by_request(root)):
                continue
            rows.append(self._row(summary.trace_id, "request",
                                  root.name if root else "(root not recorded yet)",
                                  [summary.trace_id], False))
        if everything:
            rows += [self._row(tid, "request", self._name(tid), [tid], False)
                     for tid in sorted(absorbed) if not any(r.id == tid for r in rows)]
        return sorted(rows, key=lambda r: r.start_ns, reverse=True)

    def _name(self, trace_id: str) -> str:
        root = self.summaries[trace_id].root_span
        return root.name if root else "(root not recorded yet)"

    def _row(self, row_id: str, kind: str, operation: str, members: list[str],
             stitched: bool, servers: dict[str, str] | None = None) -> Row:
        parts = [self.summaries[m] for m in members if m in self.summaries]
        mine = servers
        servers = dict(servers or {})
        request_ids: list[str] = []
        services: list[str] = []
        for part in parts:
            for uuid, name in part.servers.items():
                if mine is None or uuid in mine:
                    servers[uuid] = name or servers.get(uuid, "")
            request_ids += [r for r in part.request_ids if r not in request_ids]
            services += [s for s in part.services if s not in services]
        return Row(id=row_id, kind=kind, start_ns=min(p.start_ns for p in parts),
                   end_ns=max(p.end_ns for p in parts), operation=operation,
                   servers=servers, request_ids=request_ids, services=services,
                   spans=sum(p.spans for p in parts) + (1 if stitched else 0),
                   status=_status(kind, parts, servers), members=list(members),
                   stitched=stitched,
                   create_request_id=next((p.create_request_id for p in parts
                                           if p.create_request_id), ""))

    # Choosing a trace -----------------------------------------------------------------------

    def find(self, *, trace_id: str | None = None, server: str | None = None,
             request_id: str | None = None, latest: bool = False,
             since_ns: int | None = None) -> tuple[Row, str]:
        """The row a user means, and a note when the choice was ambiguous."""
        chosen = [bool(trace_id), bool(server), bool(request_id), latest]
        if sum(chosen) != 1:
            raise ValueError("choose exactly one of --trace-id, --server, --request-id "
                             "and --latest")
        rows = self.rows(everything=bool(trace_id or request_id))
        if since_ns is not None:
            rows = [r for r in rows if r.start_ns >= since_ns]
        note = ""
        if trace_id:
            wanted = trace_id.lower()
            found = [r for r in rows if r.id == wanted] or \
                [r for r in rows if r.kind == "request" and wanted in r.members]
            what = f"trace {trace_id}"
        elif server:
            found = [r for r in rows if r.kind == "boot" and server in r.servers]
            if not found:
                found = [r for r in rows if r.kind == "boot" and server in r.servers.values()]
                if len(found) > 1:
                    ids = sorted({uuid for r in found for uuid, name in r.servers.items()
                                  if name == server})
                    note = (f"{len(found)} boots of a server named {server!r}; the newest "
                            f"was chosen (ask by id: {', '.join(ids)})")
            what = f"a boot of server {server!r}"
        elif request_id:
            boots = [r for r in rows if r.kind == "boot" and request_id in r.request_ids]
            found = boots or [r for r in rows if request_id in r.request_ids]
            what = f"request id {request_id}"
        else:
            found = [r for r in rows if r.kind == "boot"] or rows
            what = "a trace started by a request"
        if not found:
            raise NoTrace(f"no trace matches {what} in {self.state_dir} "
                          f"({len(self.summaries)} traces; `novalab trace list` shows them)")
        return found[0], note

    def load(self, row: Row) -> list[Span]:
        """The spans of ``row`` as one trace (stitched for an untraced client's boot)."""
        return self.load_many([row])[row.id]

    def load_many(self, rows: list[Row]) -> dict[str, list[Span]]:
        """:meth:`load` for many rows, reading the files once."""
        by_trace: dict[str, list[Span]] = {}
        for span in self.spans({m for row in rows for m in row.members}):
            by_trace.setdefault(span.trace_id, []).append(span)
        loaded: dict[str, list[Span]] = {}
        for row in rows:
            if not row.stitched:
                loaded[row.id] = list(by_trace.get(row.id, ()))
                continue
            server_id = next(iter(row.servers))
            session = stitch.server_session({m: by_trace[m] for m in row.members
                                             if m in by_trace}, server_id)
            if session is None:
                raise NoTrace(f"the trace that created server {server_id} is gone from the "
                              "store")
            loaded[row.id] = session
        return loaded

    def select(self, *, timeout: float = 10.0, settle: float = 0.5, **words) -> Selection:
        """:meth:`find` then :meth:`load`, waiting (bounded) while the trace is still arriving.

        Spans are exported when they end, in batches, by many processes: a trace
        read too early misses parents or whole subtrees. We wait until it is whole
        and nothing new came for ``settle`` seconds, at most ``timeout``.
        """
        deadline = time.monotonic() + timeout
        previous = -1
        while True:
            self.refresh()
            try:
                row, note = self.find(**words)
            except NoTrace:
                # Spans are exported in batches: a request answered a moment ago may
                # not be in any file yet. Wait for it as for a trace still arriving.
                if time.monotonic() > deadline:
                    raise
                time.sleep(settle or 0.1)
                continue
            spans = self.load(row)
            whole = not incomplete(spans)
            if (whole and len(spans) == previous) or time.monotonic() > deadline:
                return Selection(row, spans, note)
            previous = len(spans)
            time.sleep(settle)


# -- which store -------------------------------------------------------------------------------

def registry_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "novalab" / "deployments.json"


def _read_registry() -> list[dict]:
    try:
        entries = json.loads(registry_path().read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    return [e for e in entries if isinstance(e, dict) and "path" in e]


def register(state_dir: str | os.PathLike, kind: str) -> None:
    """Remember that a deployment of ``kind`` (boot, serve, up) uses ``state_dir``."""
    path = str(Path(state_dir).absolute())
    entries = [e for e in _read_registry() if e["path"] != path and Path(e["path"]).exists()]
    entries.append({"path": path, "kind": kind, "started": time.time()})
    target = registry_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries[-50:], indent=1))
    tmp.replace(target)


def running(state_dir: str | os.PathLike) -> bool:
    """Does a live process of that deployment hold a pid file in ``run/``?"""
    for pid_file in Path(state_dir).glob("run/*.pid"):
        try:
            os.kill(int(pid_file.read_text().strip()), 0)
            return True
        except (ValueError, ProcessLookupError, FileNotFoundError):
            continue
        except PermissionError:
            return True
    return False


def known_stores() -> list[tuple[Path, str, bool]]:
    """(state dir, kind, running) of the deployments novalab started, best first."""
    entries = [e for e in _read_registry() if TraceStore(e["path"]).exists()]
    rows = [(Path(e["path"]), e.get("kind", "?"), running(e["path"]), e.get("started", 0))
            for e in entries]
    rows.sort(key=lambda r: (r[2], r[3]), reverse=True)
    return [(path, kind, live) for path, kind, live, _ in rows]


def locate(state_dir: str | os.PathLike | None = None) -> Path:
    """The state dir to read traces from (see the module docstring for the order)."""
    if state_dir:
        return Path(state_dir)
    if os.environ.get(ENV_STATE_DIR):
        return Path(os.environ[ENV_STATE_DIR])
    known = known_stores()
    if known:
        return known[0][0]
    for default in (".novalab", ".novalab-up"):
        if TraceStore(default).exists():
            return Path(default)
    raise NoTrace("no trace store found: start a cloud (`novalab serve`, `novalab up` or "
                  "`novalab boot`) or give --state-dir")
