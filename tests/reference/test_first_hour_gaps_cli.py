"""The first-hour commands (issue 12) that no other CLI or openstacksdk test checked.

docs/first-hour.md lists every command of the issue with the test that checks it;
this module holds the ones that had none: ``server resize``/``rebuild`` (left
out: Nova's 400 for an unknown action, naming novalab's gap) with the CLI, and
with openstacksdk shelve/unshelve, ``create_server_image``, resize/rebuild,
``get_hypervisor``, routers and floating IPs. Each check reads what the command
left (status, events, the fault's message), not only its exit code.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``).
"""

from __future__ import annotations

import time

import openstack as sdk
import pytest
from labs.test_openstack_cli import cloud_env, openstack, password_of, table  # noqa: F401
from openstack import exceptions

from tests.reference.nova.test_shelve_cli import wait_server

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI

NAME = "gaps-vm"
WAIT = 120


@pytest.fixture(scope="module")
def server(cloud_env):  # noqa: F811
    shown = table(cloud_env, "server", "create", "--flavor", "m1.nano", "--image", "cirros",
                  "--network", "private", "--wait", NAME)
    yield shown
    openstack(cloud_env, "server", "delete", "--wait", NAME)


def _connect(env: dict, user: str, project: str):
    return sdk.connect(
        auth_url=env["OS_AUTH_URL"], username=user, password=password_of(env, user),
        project_name=project, user_domain_id=env["OS_USER_DOMAIN_ID"],
        project_domain_id=env["OS_PROJECT_DOMAIN_ID"], region_name=env["OS_REGION_NAME"],
        identity_api_version="3", load_envvars=False, load_yaml_config=False)


def _events(env) -> list[str]:
    return [e["Action"] for e in table(env, "server", "event", "list", NAME)]


def _assert_left_out(result, action: str) -> None:
    assert result.returncode != 0
    assert f"There is no such action: {action}." in result.stderr, result.stderr
    assert "novalab does not implement it" in result.stderr and "400" in result.stderr


def test_resize_and_rebuild_with_the_cli_are_refused_honestly(cloud_env, server):  # noqa: F811
    env = cloud_env
    before = _events(env)
    _assert_left_out(openstack(env, "server", "resize", "--flavor", "m1.tiny", NAME,
                               expect_ok=False), "resize")
    _assert_left_out(openstack(env, "server", "resize", "confirm", NAME, expect_ok=False),
                     "confirmResize")
    _assert_left_out(openstack(env, "server", "resize", "revert", NAME, expect_ok=False),
                     "revertResize")
    _assert_left_out(openstack(env, "server", "rebuild", "--image", "cirros", NAME,
                               expect_ok=False), "rebuild")
    # Nothing happened: same flavor, still ACTIVE, no instance action recorded.
    shown = wait_server(env, NAME, "ACTIVE")
    assert shown["flavor"] == server["flavor"] and shown["image"] == server["image"]
    assert _events(env) == before


@pytest.fixture(scope="module")
def demo(cloud_env):  # noqa: F811
    conn = _connect(cloud_env, cloud_env["OS_USERNAME"], cloud_env["OS_PROJECT_NAME"])
    yield conn
    conn.close()


def _settle(conn, server_id: str, status: str):
    deadline = time.monotonic() + WAIT
    while True:
        found = conn.compute.get_server(server_id)
        if found.status == status and found.task_state is None:
            return found
        assert found.status != "ERROR", found.fault
        assert time.monotonic() < deadline, (found.status, found.task_state)
        time.sleep(0.2)


def test_openstacksdk_resize_and_rebuild_are_refused(demo, server):
    compute = demo.compute
    tiny = compute.find_flavor("m1.tiny")
    with pytest.raises(exceptions.BadRequestException,
                       match="There is no such action: resize.") as refused:
        compute.resize_server(server["id"], tiny.id)
    assert "Left out, on purpose" in str(refused.value)
    cirros = demo.image.find_image("cirros")
    with pytest.raises(exceptions.BadRequestException,
                       match="There is no such action: rebuild."):
        compute.rebuild_server(server["id"], image=cirros.id)
    shown = _settle(demo, server["id"], "ACTIVE")
    assert shown.flavor.name == "m1.nano"


def test_openstacksdk_image_create_shelve_and_unshelve(demo, server):
    compute = demo.compute
    image = compute.create_server_image(server["id"], "gaps-snap", wait=True, timeout=WAIT)
    try:
        assert (image.name, image.status) == ("gaps-snap", "active")
        assert demo.image.get_image(image.id).properties["image_type"] == "snapshot"
        _settle(demo, server["id"], "ACTIVE")
        compute.shelve_server(server["id"])
        shelved = _settle(demo, server["id"], "SHELVED_OFFLOADED")
        assert shelved.vm_state == "shelved_offloaded" and shelved.power_state == 4
        assert f"{NAME}-shelved" in {i.name for i in demo.image.images()}
        compute.unshelve_server(server["id"])
        unshelved = _settle(demo, server["id"], "ACTIVE")
        assert unshelved.power_state == 1
        # Unshelve removes the shelved image, as upstream.
        assert f"{NAME}-shelved" not in {i.name for i in demo.image.images()}
        actions = [a.action for a in compute.server_actions(server["id"])]
        assert actions[:3] == ["unshelve", "shelve", "createImage"], actions
    finally:
        demo.image.delete_image(image.id)


def test_openstacksdk_hypervisor_show(cloud_env):  # noqa: F811
    admin = _connect(cloud_env, "admin", "admin")
    try:
        (listed,) = admin.compute.hypervisors()
        shown = admin.compute.get_hypervisor(listed.id)
        assert (shown.name, shown.status, shown.state) == (listed.name, "enabled", "up")
        assert shown.service_details["host"] == shown.name
        assert shown.hypervisor_type and shown.cpu_info["arch"]  # details, not in the list
    finally:
        admin.close()


def test_openstacksdk_routers_and_floating_ips_are_left_out(demo):
    with pytest.raises(exceptions.NotFoundException, match="routers"):
        list(demo.network.routers())
    answered = demo.network.get("/floatingips")
    assert answered.status_code == 404
    assert "floatingips" in answered.text and "novalab" in answered.text
