"""Server tags, list filters and honest refusals with the unmodified ``openstack`` CLI and
openstacksdk on ``novalab serve`` (issue 12).

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``)
and its helpers. Each command runs as a user types it and its result is checked:
``server set --tag`` / ``server unset --tag`` (2.26), ``server list --tags``,
``--status``, ``--flavor``, ``--image`` and ``--name``; ``console url show`` is
Nova's 400 for a console type that is not enabled, naming novalab's gap.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from labs.test_openstack_cli import cloud_env, openstack, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI


def names(env, *args) -> set[str]:
    return {s["Name"] for s in table(env, "server", "list", *args)}


def test_tags_list_filters_and_console_url_with_the_cli(cloud_env):  # noqa: F811
    env = cloud_env
    for name in ("tags-web", "tags-db"):
        created = table(env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                        "--network", "private", "--wait", name)
        assert created["status"] == "ACTIVE"
    try:
        openstack(env, "server", "set", "--tag", "web", "--tag", "prod", "tags-web")
        openstack(env, "server", "set", "--tag", "prod", "tags-db")
        shown = table(env, "server", "show", "tags-web")
        assert sorted(shown["tags"]) == ["prod", "web"]
        assert names(env, "--tags", "web") == {"tags-web"}
        assert names(env, "--tags", "prod") == {"tags-web", "tags-db"}
        assert names(env, "--not-tags", "web") >= {"tags-db"}
        assert "tags-web" not in names(env, "--not-tags", "web")
        openstack(env, "server", "unset", "--tag", "prod", "tags-web")
        assert table(env, "server", "show", "tags-web")["tags"] == ["web"]
        assert names(env, "--tags", "prod") == {"tags-db"}

        openstack(env, "server", "stop", "tags-db")
        for _ in range(600):
            if table(env, "server", "show", "tags-db")["status"] == "SHUTOFF":
                break
        assert "tags-db" in names(env, "--status", "SHUTOFF")
        assert "tags-db" not in names(env, "--status", "ACTIVE")
        assert "tags-web" in names(env, "--status", "ACTIVE")
        assert {"tags-web", "tags-db"} <= names(env, "--flavor", "m1.nano")
        assert {"tags-web", "tags-db"} <= names(env, "--image", "cirros")
        assert names(env, "--name", "^tags-w") == {"tags-web"}

        refused = openstack(env, "console", "url", "show", "tags-web", expect_ok=False)
        assert refused.returncode != 0
        assert "Unavailable console type novnc." in refused.stderr
        assert "Left out, on purpose" in refused.stderr
        refused = openstack(env, "console", "url", "show", "--serial", "tags-web",
                            expect_ok=False)
        assert "Unavailable console type serial." in refused.stderr
    finally:
        openstack(env, "server", "delete", "--wait", "tags-web", "tags-db")


def test_openstacksdk_tags_and_an_unknown_actions_fault(cloud_env):  # noqa: F811
    script = """
import json
import openstack
conn = openstack.connect()
image = conn.image.find_image("cirros")
flavor = conn.compute.find_flavor("m1.nano")
network = conn.network.find_network("private")
server = conn.compute.create_server(name="sdk-tags", image_id=image.id, flavor_id=flavor.id,
                                    networks=[{"uuid": network.id}])
server = conn.compute.wait_for_server(server)
try:
    server.add_tag(conn.compute, "sdk")
    tagged = [s.name for s in conn.compute.servers(tags="sdk")]
    tags = conn.compute.get_server(server.id).tags
    action = conn.compute.post(f"/servers/{server.id}/action", json={"migrate": None})
    unknown = conn.compute.get("/os-server-groups")
    try:
        conn.compute.create_server_remote_console(server, protocol="vnc", type="novnc")
        console = "no error"
    except openstack.exceptions.BadRequestException as exc:
        console = exc.details
    print(json.dumps({"tagged": tagged, "tags": tags, "action": [action.status_code,
                      action.json()], "unknown": [unknown.status_code, unknown.json()],
                      "console": console}))
finally:
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server)
"""
    result = subprocess.run([sys.executable, "-c", script], env=cloud_env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["tagged"] == ["sdk-tags"]
    assert found["tags"] == ["sdk"]
    status, body = found["action"]
    assert status == 400
    assert body["badRequest"]["message"].startswith("There is no such action: migrate.")
    assert "Left out, on purpose" in body["badRequest"]["message"]
    status, body = found["unknown"]
    assert status == 404
    assert "Server groups" in body["itemNotFound"]["message"]
    assert "novalab does not implement it" in body["itemNotFound"]["message"]
    assert found["console"].startswith("Unavailable console type novnc.")
