"""The lab cloud as the runner sees it: what `describe` reads from a deployment's state."""

from __future__ import annotations

import json
import os

from novalab.labs.cloud import describe


def test_a_served_cloud_names_each_service_address(tmp_path):
    """Checks reach services outside keystone's catalog (nova-api-metadata, the metadata
    proxy) at the address the deployment wrote."""
    urls = {"keystone": "http://127.0.0.1:5000", "metadata": "http://127.0.0.1:8775"}
    (tmp_path / "cloud.json").write_text(json.dumps({
        "pid": os.getpid(), "password": "pw", "urls": urls,
        "os_env": {"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_USERNAME": "demo"}}))
    cloud = describe(tmp_path)
    assert cloud is not None and cloud.kind == "serve"
    assert cloud.urls == urls and cloud.auth_url == "http://127.0.0.1:5000/v3"


def test_a_cloud_that_is_not_running_is_none(tmp_path):
    (tmp_path / "cloud.json").write_text(json.dumps({"pid": 2 ** 22 + 7, "password": "pw",
                                                     "os_env": {}}))
    assert describe(tmp_path) is None


def test_an_up_cloud_names_its_broker_and_lab_env_exports_it(tmp_path, monkeypatch):
    """`novalab queues` on a `novalab up` cloud needs its RabbitMQ URL: `lab env` gives it."""
    from click.testing import CliRunner

    from novalab.labs.lab_cli import lab_group

    transport = "amqp://guest:guest@127.0.0.1:5672/novalab_x"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "keystone.pid").write_text(str(os.getpid()))
    (tmp_path / "state.json").write_text(json.dumps({
        "transport_url": transport, "password": "pw",
        "os_env": {"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_USERNAME": "demo"}}))
    cloud = describe(tmp_path)
    assert cloud is not None and cloud.kind == "up" and cloud.transport_url == transport
    home = tmp_path / "home"
    home.mkdir()
    (home / "cloud-choice.json").write_text(json.dumps({"kind": "running",
                                                        "state_dir": str(tmp_path)}))
    monkeypatch.setenv("NOVALAB_LAB_HOME", str(home))
    result = CliRunner().invoke(lab_group, ["env"])
    assert result.exit_code == 0, result.output
    assert f"export NOVALAB_TRANSPORT_URL={transport}" in result.output.splitlines()


def test_the_lab_cloud_has_no_broker_to_name(tmp_path):
    (tmp_path / "cloud.json").write_text(json.dumps({
        "pid": os.getpid(), "password": "pw", "transport_url": "memory:///x",
        "os_env": {"OS_AUTH_URL": "http://127.0.0.1:5000/v3"}}))
    assert describe(tmp_path).transport_url == ""
