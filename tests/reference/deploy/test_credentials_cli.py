"""Finding 9 of issue 21: no seeded user but the personas has a password anyone knows,
and rotating one (admin or a service user) leaves every service working."""

from __future__ import annotations

import httpx
import pytest
from click.testing import CliRunner
from conftest import make_cloud
from sqlalchemy import update

from novalab.labs.cli import main
from novalab.reference.common.credentials import PERSONA_PASSWORD, PERSONAS, Credentials
from novalab.reference.deploy import seed
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.deploy.credentials_cli import RotateError, rotate
from novalab.reference.keystone.core import hash_password
from novalab.reference.keystone.models import User


@pytest.fixture(scope="module")
def shared_cloud(tmp_path_factory):
    with make_cloud(tmp_path_factory.mktemp("credentials"), token_cache_time=1.0) as running:
        yield running
    running.telemetry.shutdown()


def _login(cloud, user: str, password: str) -> int:
    project = seed.USERS[user]["project"]
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    return httpx.post(f"{cloud.identity_url}/auth/tokens", json=body, timeout=30).status_code


def test_only_the_personas_log_in_with_the_documented_password(shared_cloud):
    answers = {user: _login(shared_cloud, user, PERSONA_PASSWORD) for user in seed.USERS}
    assert {u for u, status in answers.items() if status == 201} == set(PERSONAS)
    assert all(status == 401 for u, status in answers.items() if u not in PERSONAS)
    credentials = shared_cloud.config.credentials
    assert all(_login(shared_cloud, u, credentials.password_for(u)) == 201 for u in seed.USERS)


def test_rotating_service_and_admin_passwords_leaves_every_service_working(shared_cloud):
    credentials = shared_cloud.config.credentials
    # A boot first, so every service holds a service token issued under the old password.
    assert boot(shared_cloud, BootRequest(name="before")).server["status"] == "ACTIVE"
    old = {u: credentials.password_for(u) for u in ("admin", "nova", "neutron", "cinder")}
    for user in old:
        rotate(shared_cloud.config.state_dir, user, auth_url=shared_cloud.identity_url)
    for user, password in old.items():
        assert _login(shared_cloud, user, password) == 401
        assert _login(shared_cloud, user, credentials.password_for(user)) == 201
    # keystone revoked the tokens issued under the old passwords: the services log in
    # again with the new ones, Nova to Neutron and Cinder, Neutron to Nova.
    result = boot(shared_cloud, BootRequest(name="after"))
    assert result.server["status"] == "ACTIVE", result.server.get("fault")


def test_a_persona_or_unknown_user_is_not_rotated(shared_cloud):
    state_dir = shared_cloud.config.state_dir
    with pytest.raises(RotateError, match="persona"):
        rotate(state_dir, "demo", auth_url=shared_cloud.identity_url)
    with pytest.raises(RotateError, match="no password for 'mallory'"):
        rotate(state_dir, "mallory", auth_url=shared_cloud.identity_url)


def test_a_start_resets_keystone_to_the_deployments_passwords(shared_cloud):
    """A state dir from before credentials.json (every user `novalab`) gets the file's
    passwords at the next start, as `keystone-manage bootstrap` resets the admin's."""
    db = shared_cloud.keystone.db
    with db.session() as session:
        session.execute(update(User).where(User.name == "glance")
                        .values(password_hash=hash_password(PERSONA_PASSWORD)))
    assert _login(shared_cloud, "glance", PERSONA_PASSWORD) == 201
    seed.seed_keystone(shared_cloud.keystone, shared_cloud.config.credentials)
    assert _login(shared_cloud, "glance", PERSONA_PASSWORD) == 401
    assert _login(shared_cloud, "glance",
                  shared_cloud.config.credentials.password_for("glance")) == 201


def test_show_prints_the_owners_passwords(shared_cloud, tmp_path):
    state_dir = str(shared_cloud.config.state_dir)
    runner = CliRunner()
    admin = runner.invoke(main, ["credentials", "show", "admin", "--state-dir", state_dir])
    assert admin.exit_code == 0
    assert admin.output.strip() == Credentials.of(state_dir).admin
    every = runner.invoke(main, ["credentials", "show", "--state-dir", state_dir])
    assert {line.split()[0] for line in every.output.splitlines()} == \
        set(seed.USERS) - PERSONAS
    empty = runner.invoke(main, ["credentials", "show", "--state-dir", str(tmp_path)])
    assert empty.exit_code == 2 and "holds no passwords" in empty.output
