"""Fault knobs: real failures, switched on by name, at one step of the 58-step flow.

A failure drill needs a cloud that really breaks at a known hop, so that a
learner can find the break in the trace. An administrator switches a fault on
(``novalab fault inject image-checksum``); the service that owns that hop asks
at the exact point of failure (``faults.active("image-checksum")``) and then
fails there for real: ceph-rgw serves altered bytes, neutron-server fails the
binding, cinder-volume's create raises. Nothing is faked downstream: what the
learner sees (the instance's fault, the span with ERROR status) is what the
services make of that failure, as they would of a natural one.

**The state** is one file, ``STATE_DIR/faults.json``, in the state directory
every deployment has (the embedded cloud's, ``serve``'s, ``up``'s), so every
process of a cloud hears of an injection::

    {"version": 1, "faults": {"image-checksum": {"once": false, "injected_at": "..."}}}

**A scope** narrows a knob to what it names: ``inject(name, scope={"project_id":
P})`` strikes only where the service that asks says it acts for project P
(``active(name, project_id=P)``); ``{"server": NAME}``, ``{"object": OID}`` the
same for a server's name or a stored object. Lab 10's service arms a learner's
drills that way, so a class's other boots never meet them. A scoped knob is kept
under ``NAME SCOPE`` (its ``fault`` says which fault it is); an unscoped one
under its name, and strikes everyone.

Writers replace it atomically (a temporary file renamed over it) under an
exclusive ``fcntl.flock`` on ``STATE_DIR/faults.lock``. Readers cache its
content by ``(inode, mtime, size)``, so a check that finds nothing costs one
``stat``. A ``--once`` fault is consumed by the first check that fires it, under
the same lock: exactly once across threads and processes.

**A marker in the trace.** When a fault fires, the span current at that point
gets an event ``novalab.fault`` naming it: the injected failure is a lesson,
but the trace never pretends it happened by itself.

The catalog below is the one place that says what each fault does. Writing the
state directory is the privilege: whoever can, strikes every user of that cloud.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from opentelemetry import trace

from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)

FILE_NAME = "faults.json"
LOCK_NAME = "faults.lock"
# The span event a firing fault leaves, and its attributes.
EVENT = attr.NOVALAB_FAULT_EVENT
EVENT_NAME = attr.NOVALAB_FAULT_NAME
EVENT_ONCE = attr.NOVALAB_FAULT_ONCE

ANY_CLOUD = "any"
RUNNING_CLOUD = "running"  # one process per service: `novalab up`


@dataclass(frozen=True)
class Fault:
    """One knob: where it strikes, what really happens, what a learner then sees."""

    name: str
    steps: tuple[int, ...]           # of the classic 58-step table
    service: str                     # the service that fails (it asks `active`)
    happens: str                     # what really happens there
    fault_message: str               # the instance's fault, as `server show` prints it
    trace_shows: str                 # where the trace shows the failure
    # (service, span name) of the span nearest the failure that ends with ERROR
    # status; None when no span can (a process that dies ends none).
    error_span: tuple[str, str] | None
    cloud: str = ANY_CLOUD           # RUNNING_CLOUD: only on `novalab up`
    note: str = ""                   # what the administrator must know to run the drill

    @property
    def steps_text(self) -> str:
        first, last = self.steps[0], self.steps[-1]
        return str(first) if first == last else f"{first}-{last}"

    @property
    def learner_sees(self) -> str:
        return f"fault \"{self.fault_message}\"; {self.trace_shows}"

    @property
    def learner_sees_short(self) -> str:
        """The fault message, then the ERROR span: one cell of `novalab fault list`."""
        span = (f"ERROR span: {self.error_span[1]} ({self.error_span[0]})"
                if self.error_span else "no ERROR span: the process dies")
        return f"{self.fault_message}\n{span}"


CATALOG: dict[str, Fault] = {fault.name: fault for fault in (
    Fault(
        name="broker-unreachable", steps=(6,), service="nova-api",
        happens="The RPC transport cannot publish: nova-api's cast to the scheduler waits "
                "its RPC timeout (60 s) for the broker, then fails as a publish to an "
                "unreachable RabbitMQ does (MessageDeliveryFailure); nova-api sets the "
                "instance ERROR and answers 500. Memory broker only.",
        fault_message="Could not deliver a message to memory:///<broker>: not confirmed "
                      "within 60s; the broker is unreachable and the transport is "
                      "reconnecting. The in-memory broker is down (fault "
                      "broker-unreachable).",
        trace_shows="ERROR span `send scheduler` (PRODUCER) in nova-api, under "
                    "`API.create`; the POST answers 500 and no scheduler span follows",
        error_span=("nova-api", "send scheduler"),
        note="Every publish of the cloud waits while it is on (heartbeats, agents); "
             "clearing it within a publish's timeout lets that publish through, as a "
             "reconnect would. On `novalab up` (RabbitMQ) the drill is stopping RabbitMQ "
             "itself: `sudo rabbitmqctl stop_app`, and `start_app` to end it."),
    Fault(
        name="compute-crash", steps=(13,), service="nova-compute",
        happens="The nova-compute process dies (os._exit) right after it takes "
                "build_and_run_instance off its queue; the message was acked on receipt, "
                "so nobody builds the instance. Once `novalab up` restarts the dead unit, "
                "ComputeManager.init_host sets the stale build ERROR.",
        fault_message="Build of instance <uuid> aborted: nova-compute restarted during the "
                      "build",
        trace_shows="no ERROR span (a dying process ends none): nova-scheduler's `send "
                    "compute.<host>` has no `process` span after it, and the server stays "
                    "BUILD until nova-compute is back",
        error_span=None, cloud=RUNNING_CLOUD,
        note="Only on `novalab up`: in an embedded cloud that process is every service. "
             "Run `novalab up` again to restart the dead unit. Inject with --once for a "
             "single crash."),
    Fault(
        name="image-checksum", steps=(23, 24, 25), service="ceph-rgw",
        happens="ceph-rgw serves the object with one byte flipped (same length, the stored "
                "ETag); nova-compute's checksum verification of the image fails.",
        fault_message="Build of instance <uuid> aborted: Image <image id> is unacceptable: "
                      "checksum mismatch",
        trace_shows="ERROR span `fetch` (nova/virt/images.py) in nova-compute, right after "
                    "ceph-rgw's GET of the object answered 200",
        error_span=("nova-compute", "fetch"),
        note="A host downloads an image once (its image cache, instances/<host>/_base): "
             "the fault strikes a boot of an image the host has not cached yet."),
    Fault(
        name="port-binding", steps=(26,), service="neutron-server",
        happens="neutron-server fails the port binding (binding:vif_type binding_failed, "
                "as ML2 does when no mechanism driver binds); nova-compute raises "
                "PortBindingFailed and deletes the port.",
        fault_message="Build of instance <uuid> aborted: Failed to allocate the network(s), "
                      "not rescheduling: Binding failed for port <port id>, please check "
                      "neutron logs for more information.",
        trace_shows="ERROR span `Ml2Plugin._bind_port_if_needed` in neutron-server, then "
                    "`API._update_port` in nova-compute",
        error_span=("neutron-server", "Ml2Plugin._bind_port_if_needed")),
    Fault(
        name="vif-plugged-timeout", steps=(38,), service="neutron-server",
        happens="neutron-server wires the port (DHCP, L2, ACTIVE) but does not send "
                "network-vif-plugged; nova-compute waits vif_plugging_timeout (default "
                "300 s) and, as upstream's vif_plugging_is_fatal, fails the build.",
        fault_message="Build of instance <uuid> aborted: Failed to allocate the network(s), "
                      "not rescheduling: Virtual Interface creation failed: "
                      "network-vif-plugged did not arrive within vif_plugging_timeout "
                      "(<n> s)",
        trace_shows="ERROR span `ComputeVirtAPI.wait_for_instance_event` in nova-compute; "
                    "neutron-server's `Ml2Plugin.update_port_status` (port ACTIVE) sends no "
                    "network-vif-plugged",
        error_span=("nova-compute", "ComputeVirtAPI.wait_for_instance_event"),
        note="The build waits the whole vif_plugging_timeout: run a lab cloud with "
             "--vif-plugging-timeout 5 (`novalab serve`, `novalab up`)."),
    Fault(
        name="volume-error", steps=(39,), service="cinder-volume",
        happens="cinder-volume's create fails on the backend: the volume goes error, with "
                "Cinder's user message, and nova-compute stops waiting for it.",
        fault_message="Build of instance <uuid> aborted: Failure prepping block device: "
                      "Volume <volume id> did not finish being created even after we "
                      "waited <n> seconds or <n> attempts. And its status is error.",
        trace_shows="ERROR span `CreateVolumeFromSpecTask._create_raw_volume` in "
                    "cinder-volume (and `openstack volume message list` says why)",
        error_span=("cinder-volume", "CreateVolumeFromSpecTask._create_raw_volume")),
)}


class UnknownFault(ValueError):
    def __init__(self, name: str):
        super().__init__(f"no fault {name!r}; known: {', '.join(sorted(CATALOG))}")
        self.name = name


def faults_name(key: str) -> str:
    """The fault a knob's key in the file is of (``port-binding project_id=...``)."""
    return key.split(" ", 1)[0]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Faults:
    """The faults of the deployment whose state directory is ``state_dir``.

    ``deployment`` is ``"embedded"`` (``boot``, ``serve``: every service in one
    process) or ``"up"`` (one process per service). A fault of the catalog marked
    ``RUNNING_CLOUD`` never fires in an embedded cloud.
    """

    def __init__(self, state_dir: str | os.PathLike, *, deployment: str = "embedded"):
        self.root = Path(state_dir)
        self.path = self.root / FILE_NAME
        self.lock_path = self.root / LOCK_NAME
        self.deployment = deployment
        self._cache_key: tuple[int, int, int] | None = None
        self._cache: dict[str, dict] = {}
        self._cache_lock = threading.Lock()
        self._warned: set[str] = set()

    # Reading: one stat when nothing changed ------------------------------------------

    def injected(self) -> dict[str, dict]:
        """The faults switched on now: ``{name: {"once": bool, "injected_at": str}}``."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return {}
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._cache_lock:
            if key == self._cache_key:
                return self._cache
        faults = self._read()
        with self._cache_lock:
            self._cache_key, self._cache = key, faults
        return faults

    def is_injected(self, name: str) -> bool:
        """Is ``name`` switched on for everyone? A look that neither consumes nor marks it."""
        return name in self.injected()

    def active(self, name: str, **where) -> bool:
        """Should the caller fail here now? Consumes a ``--once`` fault.

        Asked by a service at the exact point of failure; ``where`` says what it acts
        for (``project_id=...``, ``server=...``, ``object=...``), which a scoped knob
        must match. True leaves the event ``novalab.fault`` on the current span.
        """
        return self.fire(name, **where) is not None

    def _matching(self, name: str, where: dict) -> tuple[str, dict] | None:
        """The first knob of fault ``name`` whose scope ``where`` matches: (key, entry)."""
        for key, entry in self.injected().items():
            scope = entry.get("scope") or {}
            if entry.get("fault", key) == name and \
                    all(where.get(k) == v for k, v in scope.items()):
                return key, entry
        return None

    def fire(self, name: str, **where) -> dict | None:
        """:meth:`active`, returning the fault's entry (``once``, ``injected_at``) or None."""
        found = self._matching(name, where)
        if found is None:
            return None
        key, entry = found
        fault = CATALOG.get(name)
        if fault is not None and fault.cloud == RUNNING_CLOUD and self.deployment != "up":
            if name not in self._warned:
                self._warned.add(name)
                LOG.warning("fault %s is injected but works only on `novalab up`; ignored",
                            name)
            return None
        once = bool(entry.get("once"))
        if once and not self._consume(key):
            return None  # another thread or process took it first
        LOG.warning("fault %s fires%s", name, " (once)" if once else "")
        trace.get_current_span().add_event(EVENT, {EVENT_NAME: name, EVENT_ONCE: once})
        return dict(entry)

    # Writing: under the lock, atomically ---------------------------------------------

    @staticmethod
    def key(name: str, scope: dict | None = None) -> str:
        """Where the knob of ``name`` for ``scope`` is kept in the file."""
        if not scope:
            return name
        return name + " " + " ".join(f"{k}={v}" for k, v in sorted(scope.items()))

    def inject(self, name: str, once: bool = False, scope: dict | None = None) -> None:
        """Switch ``name`` on, for everyone, or only where ``scope`` says (see above)."""
        if name not in CATALOG:
            raise UnknownFault(name)
        entry = {"once": once, "injected_at": _now()}
        if scope:
            entry.update(fault=name, scope={k: str(v) for k, v in scope.items()})
        with self._locked():
            faults = self._read()
            faults[self.key(name, scope)] = entry
            self._write(faults)

    def clear(self, name: str | None = None, scope: dict | None = None) -> list[str]:
        """Switch ``name`` off (only its knob for ``scope``, when given; every knob of
        it otherwise), or every fault; returns the names of the knobs that were on."""
        if name is not None and name not in CATALOG:
            raise UnknownFault(name)
        with self._locked():
            faults = self._read()
            if name is None:
                cleared = sorted(faults)
            elif scope:
                cleared = [k for k in (self.key(name, scope),) if k in faults]
            else:
                cleared = sorted(k for k, e in faults.items() if e.get("fault", k) == name)
            for item in cleared:
                del faults[item]
            if cleared:
                self._write(faults)
        return sorted({faults_name(k) for k in cleared})

    def _consume(self, name: str) -> bool:
        """Take a once fault: True for exactly one caller, whatever the thread or process."""
        with self._locked():
            faults = self._read()
            if name not in faults:
                return False
            del faults[name]
            self._write(faults)
        return True

    @contextlib.contextmanager
    def _locked(self):
        self.root.mkdir(parents=True, exist_ok=True)
        # A lock file of its own: the data file is replaced on every write, and a
        # lock on a replaced inode would lock nothing. Each open() is its own open
        # file description, so flock also excludes other threads of this process.
        with open(self.lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            LOG.warning("ignoring unreadable %s: %s", self.path, exc)
            return {}
        faults = data.get("faults") if isinstance(data, dict) else None
        return {k: v for k, v in (faults or {}).items() if isinstance(v, dict)}

    def _write(self, faults: dict[str, dict]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}"
                                  ".tmp")
        tmp.write_text(json.dumps({"version": 1, "faults": faults}, indent=1,
                                  sort_keys=True))
        tmp.replace(self.path)


class NoFaults:
    """For services built without a state directory: nothing is ever injected."""

    def injected(self) -> dict[str, dict]:
        return {}

    def is_injected(self, name: str) -> bool:
        return False

    def active(self, name: str) -> bool:
        return False

    def fire(self, name: str) -> dict | None:
        return None


NO_FAULTS = NoFaults()
