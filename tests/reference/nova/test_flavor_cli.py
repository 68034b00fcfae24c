"""Flavor management with the unmodified ``openstack`` CLI and openstacksdk on ``novalab serve``.

An admin creates a flavor with a property, shows it, sets and unsets properties,
makes a private flavor for ``demo`` (who then sees it, while ``alt_demo`` does
not), lists them all, and deletes them; a member's create is refused. The same
through openstacksdk: ``create_flavor``, the extra spec calls, ``delete_flavor``.

It reuses ``tests/labs/test_openstack_cli.py``'s cloud (``novalab serve`` on the
standard ports: run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``)
and its helpers.
"""

from __future__ import annotations

import openstack as sdk
import pytest
from labs.test_openstack_cli import cloud_env, openstack, password_of, table  # noqa: F401

pytestmark = pytest.mark.e2e  # `novalab serve` and the `openstack` CLI


def as_user(env: dict, user: str, project: str | None = None) -> dict:
    return dict(env, OS_USERNAME=user, OS_PROJECT_NAME=project or user,
                OS_PASSWORD=password_of(env, user))


def test_flavor_commands(cloud_env):  # noqa: F811
    demo, admin, alt = cloud_env, as_user(cloud_env, "admin"), as_user(cloud_env, "alt_demo")

    created = table(admin, "flavor", "create", "--ram", "128", "--disk", "1", "--vcpus", "1",
                    "--property", "hw:cpu_policy=shared", "m1.test")
    assert (created["name"], created["ram"], created["disk"], created["vcpus"]) == \
        ("m1.test", 128, 1, 1)
    assert created["os-flavor-access:is_public"] is True
    assert created["properties"] == {"hw:cpu_policy": "shared"}
    flavor_id = created["id"]
    assert len(flavor_id) == 36  # no --id: Nova made a UUID

    shown = table(demo, "flavor", "show", "m1.test")
    assert (shown["id"], shown["properties"]) == (flavor_id, {"hw:cpu_policy": "shared"})
    openstack(admin, "flavor", "set", "--property", "hw:mem_page_size=small",
              "--property", "hw:cpu_policy=dedicated", "m1.test")
    assert table(admin, "flavor", "show", flavor_id)["properties"] == {
        "hw:cpu_policy": "dedicated", "hw:mem_page_size": "small"}
    openstack(admin, "flavor", "unset", "--property", "hw:mem_page_size", "m1.test")
    assert table(admin, "flavor", "show", flavor_id)["properties"] == {
        "hw:cpu_policy": "dedicated"}
    openstack(admin, "flavor", "set", "--description", "for the first hour", "m1.test")
    assert table(admin, "flavor", "show", flavor_id)["description"] == "for the first hour"

    # A member may not create, change or delete flavors: Nova's 403.
    refused = openstack(demo, "flavor", "create", "--ram", "64", "--disk", "1", "m1.mine",
                        expect_ok=False)
    assert refused.returncode != 0 and "os-flavor-manage:create" in refused.stderr
    refused = openstack(demo, "flavor", "delete", "m1.test", expect_ok=False)
    assert refused.returncode != 0
    assert table(demo, "flavor", "show", flavor_id)["name"] == "m1.test"
    again = openstack(admin, "flavor", "create", "--ram", "64", "--disk", "1", "m1.test",
                      expect_ok=False)
    assert again.returncode != 0 and "already exists" in again.stderr

    # A private flavor for demo: demo sees it, alt_demo does not, admin lists it with --all.
    private = table(admin, "flavor", "create", "--ram", "64", "--disk", "1", "--id",
                    "m1-private", "--private", "--project", "demo", "m1.private")
    assert private["os-flavor-access:is_public"] is False
    demo_project = table(admin, "project", "show", "demo")["id"]
    assert table(admin, "flavor", "show", "m1-private")["access_project_ids"] == [demo_project]
    assert "m1.private" in {f["Name"] for f in table(demo, "flavor", "list")}
    assert "m1.private" not in {f["Name"] for f in table(alt, "flavor", "list")}
    hidden = openstack(alt, "flavor", "show", "m1-private", expect_ok=False)
    assert hidden.returncode != 0
    listed = {f["Name"]: f for f in table(admin, "flavor", "list", "--all")}
    assert {"m1.nano", "m1.test", "m1.private"} <= set(listed)
    assert listed["m1.private"]["Is Public"] is False
    assert "m1.private" not in {f["Name"] for f in table(admin, "flavor", "list")}
    assert [f["Name"] for f in table(admin, "flavor", "list", "--private")] == ["m1.private"]
    openstack(admin, "flavor", "unset", "--project", "demo", "m1-private")
    assert "m1.private" not in {f["Name"] for f in table(demo, "flavor", "list")}

    openstack(admin, "flavor", "delete", "m1.test", "m1-private")
    names = {f["Name"] for f in table(admin, "flavor", "list", "--all")}
    assert not names & {"m1.test", "m1.private"}
    assert openstack(admin, "flavor", "show", flavor_id, expect_ok=False).returncode != 0


def _connect(env: dict, user: str) -> sdk.connection.Connection:
    return sdk.connect(
        auth_url=env["OS_AUTH_URL"], username=user, password=password_of(env, user),
        project_name=user, user_domain_id=env["OS_USER_DOMAIN_ID"],
        project_domain_id=env["OS_PROJECT_DOMAIN_ID"], region_name=env["OS_REGION_NAME"],
        identity_api_version="3", load_envvars=False, load_yaml_config=False)


def test_flavors_with_openstacksdk(cloud_env):  # noqa: F811
    conn = _connect(cloud_env, "admin")
    try:
        flavor = conn.compute.create_flavor(name="sdk.flavor", ram=96, vcpus=2, disk=2,
                                            swap=8, description="made by the sdk")
        assert (flavor.name, flavor.ram, flavor.vcpus, flavor.disk, flavor.swap) == \
            ("sdk.flavor", 96, 2, 2, 8)
        assert flavor.description == "made by the sdk" and flavor.is_public
        conn.compute.create_flavor_extra_specs(flavor, {"hw:cpu_policy": "shared",
                                                        "hw:numa_nodes": "1"})
        assert conn.compute.fetch_flavor_extra_specs(flavor).extra_specs == {
            "hw:cpu_policy": "shared", "hw:numa_nodes": "1"}
        conn.compute.update_flavor_extra_specs_property(flavor, "hw:numa_nodes", "2")
        assert conn.compute.get_flavor_extra_specs_property(flavor, "hw:numa_nodes") == "2"
        conn.compute.delete_flavor_extra_specs_property(flavor, "hw:cpu_policy")
        assert conn.compute.get_flavor(flavor.id).extra_specs == {"hw:numa_nodes": "2"}
        private = conn.compute.create_flavor(name="sdk.private", ram=64, vcpus=1, disk=1,
                                             is_public=False)
        demo_project = conn.identity.find_project("demo").id
        conn.compute.flavor_add_tenant_access(private, demo_project)
        assert conn.compute.get_flavor_access(private) == [
            {"flavor_id": private.id, "tenant_id": demo_project}]
        demo = _connect(cloud_env, "demo")
        try:
            assert "sdk.private" in {f.name for f in demo.compute.flavors()}
        finally:
            demo.close()
        conn.compute.flavor_remove_tenant_access(private, demo_project)
        assert conn.compute.get_flavor_access(private) == []
        conn.compute.delete_flavor(private)
        conn.compute.delete_flavor(flavor)
        assert conn.compute.find_flavor("sdk.flavor") is None
        assert "sdk.private" not in {f.name for f in conn.compute.flavors(is_public=None)}
    finally:
        conn.close()
