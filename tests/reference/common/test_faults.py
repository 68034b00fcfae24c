"""The fault knobs' file: STATE_DIR/faults.json, read for a stat, --once taken exactly once.

Every process of a cloud asks the same file, so the semantics are tested across
threads (one Faults each, and one shared) and across processes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novalab.reference.common import faults as faults_module
from novalab.reference.common.faults import (
    CATALOG,
    EVENT,
    EVENT_NAME,
    NO_FAULTS,
    RUNNING_CLOUD,
    Faults,
    UnknownFault,
)
from novalab.reference.rpc.memory import MemoryTransport
from novalab.reference.rpc.transport import Message, MessageDeliveryFailure


def test_nothing_injected_without_a_file(tmp_path):
    faults = Faults(tmp_path)
    assert faults.injected() == {}
    assert not faults.active("image-checksum")
    assert not (tmp_path / "faults.json").exists()


def test_inject_is_seen_by_every_reader_until_cleared(tmp_path):
    admin, service = Faults(tmp_path), Faults(tmp_path)
    admin.inject("image-checksum")
    admin.inject("port-binding", once=True)
    assert set(service.injected()) == {"image-checksum", "port-binding"}
    assert service.active("image-checksum")
    assert service.active("image-checksum")  # not once: every check fires
    assert admin.clear("image-checksum") == ["image-checksum"]
    assert not service.active("image-checksum")
    assert admin.clear("image-checksum") == []
    assert admin.clear() == ["port-binding"]
    assert service.injected() == {}
    written = json.loads((tmp_path / "faults.json").read_text())
    assert written == {"version": 1, "faults": {}}


def test_unknown_names_are_refused_with_the_known_ones(tmp_path):
    with pytest.raises(UnknownFault) as caught:
        Faults(tmp_path).inject("disk-full")
    for name in CATALOG:
        assert name in str(caught.value)
    with pytest.raises(UnknownFault):
        Faults(tmp_path).clear("disk-full")


def test_a_once_fault_fires_for_exactly_one_of_many_threads(tmp_path):
    Faults(tmp_path).inject("volume-error", once=True)
    shared = Faults(tmp_path)
    readers = [Faults(tmp_path) for _ in range(12)] + [shared] * 12
    for reader in readers:
        assert reader.is_injected("volume-error")  # every cache holds it before the race
    barrier = threading.Barrier(len(readers))
    fired = []

    def check(reader):
        barrier.wait()
        fired.append(reader.active("volume-error"))

    threads = [threading.Thread(target=check, args=(r,)) for r in readers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fired.count(True) == 1
    assert fired.count(False) == len(readers) - 1
    assert Faults(tmp_path).injected() == {}


CHECK_IN_A_PROCESS = """
import sys, time
from pathlib import Path
from novalab.reference.common.faults import Faults
root = Path(sys.argv[1])
faults = Faults(root)
assert faults.is_injected("port-binding")
(root / f"ready-{sys.argv[2]}").touch()
while not (root / "go").exists():
    time.sleep(0.005)
print(faults.active("port-binding"))
"""


def test_a_once_fault_fires_for_exactly_one_of_several_processes(tmp_path):
    Faults(tmp_path).inject("port-binding", once=True)
    processes = [subprocess.Popen([sys.executable, "-c", CHECK_IN_A_PROCESS, str(tmp_path),
                                   str(n)], stdout=subprocess.PIPE, text=True)
                 for n in range(4)]
    # Every process has seen the fault before any may take it.
    while len(list(tmp_path.glob("ready-*"))) < len(processes):
        assert all(p.poll() is None for p in processes)
        time.sleep(0.01)
    (tmp_path / "go").touch()
    answers = [p.communicate(timeout=60)[0].strip() for p in processes]
    assert all(p.returncode == 0 for p in processes)
    assert sorted(answers) == ["False", "False", "False", "True"]


def test_readers_cache_by_mtime_and_reread_after_a_write(tmp_path, monkeypatch):
    reader = Faults(tmp_path)
    reads = []
    original = Faults._read

    def counting(self):
        reads.append(self)
        return original(self)

    monkeypatch.setattr(Faults, "_read", counting)
    Faults(tmp_path).inject("image-checksum")
    reads.clear()
    for _ in range(100):
        assert reader.active("image-checksum")
    assert len(reads) == 1  # one read; then a stat per check
    Faults(tmp_path).clear()
    reads.clear()
    assert not reader.active("image-checksum")
    assert len(reads) == 1


def test_a_process_killing_fault_never_fires_in_an_embedded_cloud(tmp_path):
    crash = [f.name for f in CATALOG.values() if f.cloud == RUNNING_CLOUD]
    assert crash == ["compute-crash"]
    Faults(tmp_path).inject("compute-crash")
    assert not Faults(tmp_path, deployment="embedded").active("compute-crash")
    assert Faults(tmp_path, deployment="up").active("compute-crash")


def test_a_firing_fault_marks_the_current_span(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    faults = Faults(tmp_path)
    faults.inject("image-checksum", once=True)
    with provider.get_tracer("test").start_as_current_span("RGWGetObj::execute"):
        assert faults.active("image-checksum")
    (span,) = exporter.get_finished_spans()
    (event,) = span.events
    assert event.name == EVENT
    assert event.attributes[EVENT_NAME] == "image-checksum"


def test_services_without_a_state_dir_have_no_faults():
    assert NO_FAULTS.injected() == {}
    assert not NO_FAULTS.active("image-checksum")
    assert NO_FAULTS.fire("image-checksum") is None


def test_the_catalog_says_what_each_fault_does():
    assert set(CATALOG) == {"image-checksum", "port-binding", "volume-error",
                            "vif-plugged-timeout", "broker-unreachable", "compute-crash"}
    for fault in CATALOG.values():
        assert all(1 <= step <= 58 for step in fault.steps)
        assert fault.service and fault.happens and fault.fault_message and fault.trace_shows
    assert CATALOG["image-checksum"].steps == (23, 24, 25)
    assert CATALOG["port-binding"].steps == (26,)
    assert CATALOG["vif-plugged-timeout"].steps == (38,)
    assert CATALOG["volume-error"].steps == (39,)
    assert CATALOG["broker-unreachable"].steps == (6,)
    assert CATALOG["compute-crash"].steps == (13,)


# The memory broker, unreachable ---------------------------------------------------------


def _transport(tmp_path, name):
    transport = MemoryTransport(f"memory:///{name}")
    transport.faults = Faults(tmp_path)
    return transport


def test_an_unreachable_memory_broker_fails_a_publish_as_rabbitmq_does(tmp_path):
    transport = _transport(tmp_path, "unreachable-a")
    try:
        transport.faults.inject("broker-unreachable", once=True)
        with pytest.raises(MessageDeliveryFailure) as caught:
            transport.publish("nova", "scheduler", Message(body=b"{}"), timeout=0.2)
        # The pika transport's message for a publish RabbitMQ never confirmed.
        assert "not confirmed within 0.2s; the broker is unreachable and the transport " \
               "is reconnecting." in str(caught.value)
        transport.publish("nova", "scheduler", Message(body=b"{}"), timeout=0.2)  # once
    finally:
        transport.close()


def test_a_broker_back_within_the_timeout_takes_the_waiting_publish(tmp_path):
    transport = _transport(tmp_path, "unreachable-b")
    received = threading.Event()
    transport.consume("nova", "scheduler", "scheduler", lambda message: received.set())
    try:
        transport.faults.inject("broker-unreachable")
        outcome = []
        publisher = threading.Thread(target=lambda: outcome.append(transport.publish(
            "nova", "scheduler", Message(body=b"{}"), timeout=120)))
        publisher.start()
        assert not received.wait(0.3)  # waiting for the broker
        Faults(tmp_path).clear("broker-unreachable")
        publisher.join(timeout=60)
        assert outcome == [None]
        assert received.wait(10)
    finally:
        transport.close()


def test_every_fault_is_asked_for_and_every_name_asked_is_in_the_catalog():
    root = Path(faults_module.__file__).resolve().parents[1]  # reference/
    sources = {path: path.read_text() for path in root.rglob("*.py")
               if path.name != "faults.py"}
    asked = {name for text in sources.values()
             for name in re.findall(r'faults\.(?:active|fire)\("([a-z-]+)"[,)]', text)}
    asked |= {name for text in sources.values()
              for name in re.findall(r'^UNREACHABLE = "([a-z-]+)"', text, re.M)}
    assert asked == set(CATALOG)


def test_a_scoped_fault_strikes_only_what_its_scope_names(tmp_path):
    """Lab 10's service arms a learner's drills for their project alone: a classmate's
    boot, or a check that names no project, never meets them; clearing one learner's
    leaves the others' and the cloud-wide knob."""
    service, compute = Faults(tmp_path), Faults(tmp_path)
    service.inject("port-binding", once=True, scope={"project_id": "ann"})
    service.inject("port-binding", once=True, scope={"project_id": "bob"})
    service.inject("volume-error", once=True, scope={"project_id": "ann"})
    assert not compute.active("port-binding", project_id="carl")
    assert not compute.active("port-binding")
    assert compute.active("port-binding", project_id="ann")
    assert not compute.active("port-binding", project_id="ann")  # once
    service.inject("image-checksum")
    assert service.clear("volume-error", scope={"project_id": "ann"}) == ["volume-error"]
    assert not compute.active("volume-error", project_id="ann")
    assert compute.active("image-checksum", object="anything")  # unscoped: everyone's
    assert compute.active("port-binding", project_id="bob")
    service.inject("port-binding", once=True, scope={"project_id": "bob"})
    service.inject("port-binding")
    assert service.clear("port-binding") == ["port-binding"]  # the admin's: every knob
    assert not compute.active("port-binding", project_id="bob")
    assert set(service.injected()) == {"image-checksum"}
