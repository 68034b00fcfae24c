"""The ``novalab`` command as a user runs it: boot end to end, serve until interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from novalab.labs.cli import main

pytestmark = pytest.mark.e2e  # `novalab serve` and the `novalab` CLI in subprocesses

NOVALAB = [sys.executable, "-m", "novalab.labs.cli"]


def test_help_explains_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "boot" in result.output and "serve" in result.output
    boot_help = CliRunner().invoke(main, ["boot", "--help"])
    assert "--transport" in boot_help.output and "amqp://" in boot_help.output


def test_boot_writes_trace_and_exits_zero(tmp_path):
    out = tmp_path / "out"
    # A registry of its own: the commands below must find this boot's store unaided.
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "xdg"))
    result = subprocess.run([*NOVALAB, "boot", "--out", str(out), "--state-dir",
                             str(tmp_path / "state"), "--name", "mine"], capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert "ACTIVE" in result.stderr
    doc = json.loads((out / "trace.json").read_text())
    trace_ids = {s["traceId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]
                 for s in ss["spans"]}
    assert len(trace_ids) == 1
    # The same boot is in the store of the (temporary) cloud, found with no path given.
    listed = subprocess.run([*NOVALAB, "trace", "list", "--json"], capture_output=True,
                            text=True, timeout=60, env=env)
    assert listed.returncode == 0, listed.stderr
    (row,) = [r for r in json.loads(listed.stdout) if r["kind"] == "boot"]
    assert row["trace_id"] in trace_ids and row["servers"][0]["name"] == "mine"
    assert row["status"] == "ACTIVE" and row["steps"] == "58/58"
    check = subprocess.run([*NOVALAB, "flow", "check", "--server", "mine"],
                           capture_output=True, text=True, timeout=60, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "58/58 steps matched" in check.stdout


def test_boot_error_exits_nonzero(tmp_path):
    result = subprocess.run([*NOVALAB, "boot", "--out", str(tmp_path), "--image", "nope",
                             "--state-dir", str(tmp_path / "state")], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1
    assert "No Image found for nope" in result.stderr
    assert not (tmp_path / "trace.json").exists()


def test_boot_reports_unreachable_broker(tmp_path):
    result = subprocess.run([*NOVALAB, "boot", "--out", str(tmp_path), "--transport",
                             "amqp://guest:guest@127.0.0.1:1/", "--state-dir",
                             str(tmp_path / "state")], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert "the cloud did not start" in result.stderr
    assert "rabbitmq-server -detached" in result.stderr


def test_boot_running_refuses_options_of_the_embedded_cloud(tmp_path):
    """The running cloud was configured by `novalab up`: say so, don't ignore the flag."""
    result = CliRunner().invoke(main, ["boot", "--cloud", "running", "--computes", "2",
                                       "--db", "sqlite://", "--state-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "--computes, --db: only for the embedded cloud" in result.output
    assert "novalab up" in result.output


def test_serve_prints_os_variables_and_stops_on_sigint(tmp_path, standard_ports):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([*NOVALAB, "serve", "--state-dir", str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        variables = {}
        deadline = time.monotonic() + 60
        while "OS_REGION_NAME" not in variables and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("export "):
                key, _, value = line[len("export "):].strip().partition("=")
                variables[key] = value
        assert variables["OS_AUTH_URL"] == "http://127.0.0.1:5000/v3"
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": variables["OS_USERNAME"], "domain": {"id": "default"},
            "password": variables["OS_PASSWORD"]}}},
            "scope": {"project": {"name": variables["OS_PROJECT_NAME"],
                                  "domain": {"id": "default"}}}}}
        token = httpx.post(variables["OS_AUTH_URL"] + "/auth/tokens", json=body)
        assert token.status_code == 201
        flavors = httpx.get("http://127.0.0.1:8774/v2.1/flavors",
                            headers={"X-Auth-Token": token.headers["X-Subject-Token"]})
        assert len(flavors.json()["flavors"]) == 3
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert Path(tmp_path / "traces" / "serve.jsonl").stat().st_size > 0
    assert not (tmp_path / "run" / "serve.pid").exists()  # removed on a clean stop
