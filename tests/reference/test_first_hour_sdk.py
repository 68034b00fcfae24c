"""A DevStack user's first hour with openstacksdk on ``novalab serve`` (issue 12).

The same cloud and the same first hour as ``test_first_hour_cli.py``, through the
library instead of the CLI: ``openstack.connect()`` built from the ``OS_*``
variables ``serve`` prints (``demo``; the admin's calls as ``admin``, as on
DevStack). openstacksdk checks little of what it is answered (a missing field is
None, an unknown one is dropped), so every call is followed by the fields it
should have changed. Run it in a network namespace of its own, e.g.
``unshare -rn bash -c 'ip link set lo up; .venv/bin/python -m pytest THIS_FILE'``.
"""

from __future__ import annotations

import base64
import hashlib
import time

import openstack
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from labs.test_openstack_cli import cloud_env, password_of  # noqa: F401
from openstack import exceptions

pytestmark = pytest.mark.e2e  # `novalab serve`

WAIT = 120


def _connect(env: dict, user: str, project: str) -> openstack.connection.Connection:
    return openstack.connect(
        auth_url=env["OS_AUTH_URL"], username=user, password=password_of(env, user),
        project_name=project, user_domain_id=env["OS_USER_DOMAIN_ID"],
        project_domain_id=env["OS_PROJECT_DOMAIN_ID"], region_name=env["OS_REGION_NAME"],
        identity_api_version="3", load_envvars=False, load_yaml_config=False)


@pytest.fixture(scope="module")
def demo(cloud_env):  # noqa: F811
    conn = _connect(cloud_env, cloud_env["OS_USERNAME"], cloud_env["OS_PROJECT_NAME"])
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def admin(cloud_env):  # noqa: F811
    conn = _connect(cloud_env, "admin", "admin")
    yield conn
    conn.close()


def _md5(public_key: str) -> str:
    digest = hashlib.md5(base64.b64decode(public_key.split()[1]),
                         usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def _settle(conn, server, status: str):
    """The server once it shows ``status`` with no task in progress (the sdk's
    wait_for_server looks at the status only, which a task may not have changed yet)."""
    deadline = time.monotonic() + WAIT
    while True:
        server = conn.compute.get_server(server.id)
        if server.status == status and server.task_state is None:
            return server
        assert server.status != "ERROR", server.fault
        assert time.monotonic() < deadline, (server.status, server.task_state)
        time.sleep(0.2)


def test_identity_as_admin(demo, admin):
    projects = {p.name: p for p in admin.identity.projects()}
    assert {"admin", "demo", "alt_demo", "service"} <= set(projects)
    assert (projects["demo"].domain_id, projects["demo"].is_enabled) == ("default", True)
    assert admin.identity.get_project(projects["demo"].id).name == "demo"
    users = {u.name: u for u in admin.identity.users()}
    assert {"admin", "demo", "reader", "nova"} <= set(users)
    assert users["demo"].default_project_id == projects["demo"].id
    roles = {r.name: r for r in admin.identity.roles()}
    assert {"admin", "member", "reader", "service"} <= set(roles)
    assignments = list(admin.identity.role_assignments(user_id=users["demo"].id,
                                                       scope_project_id=projects["demo"].id))
    assert roles["member"].id in {a.role["id"] for a in assignments}
    assert {a.user["id"] for a in assignments} == {users["demo"].id}
    assert {a.scope["project"]["id"] for a in assignments} == {projects["demo"].id}
    assert [r.id for r in demo.identity.regions()] == ["RegionOne"]  # any user reads them
    services = {s.type: s for s in admin.identity.services()}
    assert {"identity", "compute", "image", "network", "volumev3"} <= set(services)
    assert services["compute"].name == "nova" and services["compute"].is_enabled
    (public,) = admin.identity.endpoints(service_id=services["compute"].id, interface="public")
    assert (public.region_id, public.is_enabled) == ("RegionOne", True)
    assert public.url.startswith("http://127.0.0.1:8774/")
    # The catalog of demo's token names the same endpoint.
    assert demo.compute.get_endpoint().startswith(public.url.split("/v2.1")[0])
    with pytest.raises(exceptions.ForbiddenException):
        list(demo.identity.endpoints())


def test_images(demo, admin):
    (cirros,) = [i for i in demo.image.images() if i.name == "cirros"]
    image = demo.image.get_image(cirros.id)
    assert (image.status, image.disk_format, image.visibility) == ("active", "raw", "public")
    assert image.size == 1024 * 1024 and image.checksum
    # A user's own image: PATCH, tags, deactivate and reactivate (admin's).
    mine = demo.image.create_image(name="sdk-img", disk_format="raw", container_format="bare",
                                   data=b"\0" * 1024, allow_duplicates=True, wait=True)
    try:
        updated = demo.image.update_image(mine, name="sdk-img-2", min_ram=64,
                                          os_distro="cirros")
        assert (updated.name, updated.min_ram) == ("sdk-img-2", 64)
        shown = demo.image.get_image(mine.id)
        assert (shown.name, shown.min_ram, shown.os_distro) == ("sdk-img-2", 64, "cirros")
        demo.image.add_tag(mine, "first-hour")
        demo.image.add_tag(mine, "sdk")
        assert sorted(demo.image.get_image(mine.id).tags) == ["first-hour", "sdk"]
        demo.image.remove_tag(mine, "sdk")
        assert demo.image.get_image(mine.id).tags == ["first-hour"]
        assert [i.id for i in demo.image.images(tag="first-hour")] == [mine.id]
        admin.image.deactivate_image(mine)
        assert demo.image.get_image(mine.id).status == "deactivated"
        # download_image does not look at the file's status (it would hash glance's
        # 403 body and call it a checksum mismatch): ask for the data itself.
        refused = demo.image.get(f"/images/{mine.id}/file")
        assert refused.status_code == 403 and "deactivated" in refused.text
        admin.image.reactivate_image(mine)
        assert demo.image.get_image(mine.id).status == "active"
        assert demo.image.download_image(mine).content == b"\0" * 1024
    finally:
        demo.image.delete_image(mine)
    assert demo.image.find_image(mine.id) is None


def test_network(demo, admin):
    (private,) = demo.network.networks(name="private")
    assert not private.is_router_external and private.status == "ACTIVE"
    assert list(demo.network.networks(is_router_external=True)) == []
    assert [n.id for n in demo.network.networks(is_router_external=False)] == [private.id]
    (subnet,) = demo.network.subnets(network_id=private.id)
    assert subnet.id in private.subnet_ids
    assert (subnet.cidr, subnet.ip_version, subnet.gateway_ip, subnet.is_dhcp_enabled) == \
        ("10.0.0.0/24", 4, "10.0.0.1", True)
    dhcp = [p for p in admin.network.ports(network_id=private.id)
            if p.device_owner == "network:dhcp"]
    assert len(dhcp) == 1 and dhcp[0].fixed_ips[0]["subnet_id"] == subnet.id
    agents = {a.agent_type: a for a in admin.network.agents()}
    assert set(agents) == {"DHCP agent", "Linux bridge agent"}
    assert all(a.is_alive and a.is_admin_state_up for a in agents.values())
    assert agents["DHCP agent"].binary == "neutron-dhcp-agent"
    assert list(demo.network.agents()) == []  # agents are the admin's
    aliases = {e.alias for e in demo.network.extensions()}
    assert {"agent", "external-net", "quotas"} <= aliases and "router" not in aliases


def test_flavors_and_limits(demo):
    flavors = {f.name: f for f in demo.compute.flavors()}
    assert set(flavors) == {"m1.nano", "m1.tiny", "m1.small"}
    nano = flavors["m1.nano"]
    assert (nano.id, nano.ram, nano.vcpus, nano.disk, nano.is_public) == \
        ("42", 64, 1, 1, True)
    shown = demo.compute.get_flavor("42", get_extra_specs=True)
    assert shown.name == "m1.nano" and shown.extra_specs == {}
    assert demo.compute.fetch_flavor_extra_specs(nano).extra_specs == {}
    with pytest.raises(exceptions.NotFoundException):
        demo.compute.get_flavor_extra_specs_property(nano, "hw:cpu_policy")
    limits = demo.compute.get_limits()
    assert limits.absolute.instances > 0 and limits.absolute.total_cores > 0
    project = demo.current_project_id
    quota = demo.compute.get_quota_set(project)
    assert (quota.instances, quota.cores, quota.ram, quota.key_pairs) == \
        (limits.absolute.instances, limits.absolute.total_cores,
         limits.absolute.total_ram, limits.absolute.keypairs)


def test_keypairs(demo):
    generated = demo.compute.create_keypair(name="sdk-gen")  # below 2.92 Nova makes one
    try:
        assert generated.private_key and generated.type == "ssh"
        assert generated.fingerprint == _md5(generated.public_key)
        private = serialization.load_pem_private_key(generated.private_key.encode(), None)
        mine = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                 serialization.PublicFormat.OpenSSH).decode()
        assert mine.split()[:2] == generated.public_key.split()[:2]
        shown = demo.compute.get_keypair("sdk-gen")
        assert shown.private_key is None  # answered once, never stored
        assert shown.fingerprint == generated.fingerprint
    finally:
        demo.compute.delete_keypair("sdk-gen")
    with pytest.raises(exceptions.NotFoundException):
        demo.compute.get_keypair("sdk-gen")
    public = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    imported = demo.compute.create_keypair(name="sdk-key", public_key=public)
    assert imported.private_key is None and imported.public_key == public
    assert imported.fingerprint == _md5(public)
    assert {k.name: k.fingerprint for k in demo.compute.keypairs()} == \
        {"sdk-key": imported.fingerprint}
    with pytest.raises(exceptions.ConflictException):
        demo.compute.create_keypair(name="sdk-key", public_key=public)


@pytest.fixture(scope="module")
def server(demo):
    """A server booted with the key pair test_keypairs imported (module order)."""
    image = demo.image.find_image("cirros")
    flavor = demo.compute.find_flavor("m1.nano")
    network = demo.network.find_network("private")
    with pytest.raises(exceptions.BadRequestException, match="Invalid key_name provided"):
        demo.compute.create_server(name="sdk-nokey", image_id=image.id, flavor_id=flavor.id,
                                   networks=[{"uuid": network.id}], key_name="nosuchkey")
    created = demo.compute.create_server(name="sdk-vm", image_id=image.id, flavor_id=flavor.id,
                                         networks=[{"uuid": network.id}], key_name="sdk-key")
    server = demo.compute.wait_for_server(created, interval=0.5, wait=WAIT)
    yield server
    demo.compute.delete_server(server)
    demo.compute.wait_for_delete(server, interval=0.5, wait=WAIT)
    demo.compute.delete_keypair("sdk-key")


def test_server_boots_with_its_key(demo, server):
    assert (server.status, server.key_name, server.vm_state, server.power_state) == \
        ("ACTIVE", "sdk-key", "active", 1)
    (address,) = server.addresses["private"]
    assert address["addr"].startswith("10.0.0.") and address["version"] == 4
    (port,) = demo.network.ports(device_id=server.id)
    assert port.fixed_ips[0]["ip_address"] == address["addr"]
    assert port.status == "ACTIVE"


def test_server_actions_and_their_events(demo, admin, server):
    compute = demo.compute
    compute.stop_server(server)
    stopped = _settle(demo, server, "SHUTOFF")
    assert (stopped.vm_state, stopped.power_state) == ("stopped", 4)
    with pytest.raises(exceptions.ConflictException, match="vm_state stopped"):
        compute.pause_server(server)
    compute.start_server(server)
    assert _settle(demo, server, "ACTIVE").power_state == 1
    for kind in ("SOFT", "HARD"):
        compute.reboot_server(server, kind)
        assert _settle(demo, server, "ACTIVE").vm_state == "active"
    compute.pause_server(server)
    paused = _settle(demo, server, "PAUSED")
    assert (paused.vm_state, paused.power_state) == ("paused", 3)
    compute.unpause_server(server)
    _settle(demo, server, "ACTIVE")
    compute.suspend_server(server)
    assert _settle(demo, server, "SUSPENDED").vm_state == "suspended"
    compute.resume_server(server)
    assert _settle(demo, server, "ACTIVE").power_state == 1

    compute.lock_server(server)
    assert compute.get_server(server.id).is_locked
    with pytest.raises(exceptions.ConflictException, match="is locked"):
        compute.stop_server(server)
    assert compute.get_server(server.id).status == "ACTIVE"
    compute.unlock_server(server)
    assert not compute.get_server(server.id).is_locked

    console = compute.get_server_console_output(server, length=3)["output"]
    assert 0 < len(console.splitlines()) <= 3
    whole = compute.get_server_console_output(server)["output"]
    assert whole.endswith(console) and len(whole.splitlines()) > 3

    # One instance action per request that changed the server, newest first; the
    # refused stop recorded none.
    actions = list(compute.server_actions(server))
    assert [a.action for a in actions] == [
        "unlock", "lock", "resume", "suspend", "unpause", "pause", "reboot", "reboot",
        "start", "stop", "create"]
    assert len({a.request_id for a in actions}) == len(actions)
    assert all(a.server_id == server.id and a.project_id == server.project_id
               for a in actions)
    stop = next(a for a in actions if a.action == "stop")
    shown = compute.get_server_action(stop.request_id, server)
    assert (shown.action, shown.request_id) == ("stop", stop.request_id)
    assert [(e.event, e.result) for e in shown.events] == \
        [("compute_stop_instance", "Success")]
    lock = compute.get_server_action(actions[1].request_id, server)
    assert [(e.event, e.result) for e in lock.events] == [("api_lock", "Success")]


def test_volume_attachments(demo, server):
    volume = demo.block_storage.create_volume(size=1, name="sdk-attach")
    demo.block_storage.wait_for_status(volume, "available", interval=0.5, wait=WAIT)
    try:
        attachment = demo.compute.create_volume_attachment(server, volume_id=volume.id)
        assert (attachment.volume_id, attachment.server_id) == (volume.id, server.id)
        assert attachment.device.startswith("/dev/vd")
        volume = demo.block_storage.wait_for_status(volume, "in-use", interval=0.5, wait=WAIT)
        (attached,) = volume.attachments
        assert (attached["server_id"], attached["device"]) == (server.id, attachment.device)
        listed = list(demo.compute.volume_attachments(server))
        assert [(a.volume_id, a.device) for a in listed] == [(volume.id, attachment.device)]
        attached_volumes = demo.compute.get_server(server.id).attached_volumes
        assert [v["id"] for v in attached_volumes] == [volume.id]
        demo.compute.delete_volume_attachment(server, volume)
        volume = demo.block_storage.wait_for_status(volume, "available", interval=0.5,
                                                    wait=WAIT)
        assert volume.attachments == []
        assert list(demo.compute.volume_attachments(server)) == []
        actions = [a.action for a in demo.compute.server_actions(server)]
        assert actions[:2] == ["detach_volume", "attach_volume"]
    finally:
        demo.block_storage.delete_volume(volume)
        demo.block_storage.wait_for_delete(volume, interval=0.5, wait=WAIT)


def test_block_storage(demo):
    project = demo.current_project_id
    before = demo.block_storage.get_limits()
    volume = demo.block_storage.create_volume(size=1, name="sdk-vol")
    volume = demo.block_storage.wait_for_status(volume, "available", interval=0.5, wait=WAIT)
    try:
        assert (volume.size, volume.name, volume.is_bootable) == (1, "sdk-vol", False)
        assert volume.id in {v.id for v in demo.block_storage.volumes()}
        snapshot = demo.block_storage.create_snapshot(volume_id=volume.id, name="sdk-snap")
        snapshot = demo.block_storage.wait_for_status(snapshot, "available", interval=0.5,
                                                      wait=WAIT)
        assert (snapshot.volume_id, snapshot.size, snapshot.name) == (volume.id, 1, "sdk-snap")
        assert [s.id for s in demo.block_storage.snapshots(volume_id=volume.id)] == \
            [snapshot.id]
        limits = demo.block_storage.get_limits().absolute
        assert limits.total_volumes_used == before.absolute.total_volumes_used + 1
        assert limits.total_snapshots_used == before.absolute.total_snapshots_used + 1
        assert limits.total_gigabytes_used == before.absolute.total_gigabytes_used + 2
        quota = demo.block_storage.get_quota_set(project)
        assert (quota.volumes, quota.snapshots, quota.gigabytes) == \
            (limits.max_total_volumes, limits.max_total_snapshots,
             limits.max_total_volume_gigabytes)
        # A volume with a snapshot cannot go (400), as upstream.
        with pytest.raises(exceptions.BadRequestException):
            demo.block_storage.delete_volume(volume)
        demo.block_storage.delete_snapshot(snapshot)
        demo.block_storage.wait_for_delete(snapshot, interval=0.5, wait=WAIT)
    finally:
        demo.block_storage.delete_volume(volume)
        demo.block_storage.wait_for_delete(volume, interval=0.5, wait=WAIT)
    assert demo.block_storage.get_limits().absolute.total_volumes_used == \
        before.absolute.total_volumes_used
