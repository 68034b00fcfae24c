"""``novalab credentials show|rotate``: the deployment's own passwords, for its owner.

The passwords live in ``STATE_DIR/credentials.json`` (mode 0600,
reference/common/credentials.py): whoever may read that file runs the
deployment. ``rotate`` changes one while the cloud runs, as an operator would
with ``openstack user set --password`` and then each service's
``[keystone_authtoken] password``: keystone first (which revokes the user's
tokens), then the file, which every service of the deployment reads again
before it next logs in, so none needs a restart.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import httpx

from novalab.reference.common.credentials import (
    PERSONA_PASSWORD,
    PERSONAS,
    Credentials,
    generate,
    path_of,
)


class RotateError(Exception):
    """The password could not be changed; the message says why and what to do."""


def _fail(message: str):
    click.echo(f"novalab credentials: {message}", err=True)
    raise SystemExit(2)


def _state_dir(state_dir: str | None) -> Path:
    from novalab.tracing import store

    try:
        return store.locate(state_dir)
    except store.NoTrace:
        _fail("no deployment found: give --state-dir (serve's .novalab, up's .novalab-up)")


def auth_url_of(state_dir: Path) -> str | None:
    """Keystone's URL as the cloud of ``state_dir`` wrote it (serve's cloud.json, up's
    state.json), or None when neither names a running one."""
    for name in ("cloud.json", "state.json"):
        try:
            record = json.loads((state_dir / name).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        if record.get("os_env") and not record.get("stopped_at"):
            return record["os_env"]["OS_AUTH_URL"]
    return None


def rotate(state_dir: Path, user: str, auth_url: str | None = None) -> str:
    """Give ``user`` (admin or a service user) a new password in keystone, then in the
    deployment's file; returns it. ``auth_url``: keystone's, else the one the
    deployment wrote."""
    from novalab.reference.deploy.client import ClientError, CloudClient
    from novalab.tracing.http import http_client

    credentials = Credentials.of(state_dir)
    if user in PERSONAS:
        raise RotateError(f"{user} is a persona with the documented password; change it "
                          "with `openstack user password set` as that user")
    if user not in credentials.users():
        known = ", ".join(sorted(credentials.users())) or "none"
        raise RotateError(f"{path_of(state_dir)} has no password for {user!r} (it has: "
                          f"{known})")
    auth_url = auth_url or auth_url_of(state_dir)
    if auth_url is None:
        raise RotateError(f"no cloud runs from {state_dir}: start it, then rotate (keystone "
                          "must change the password with the file)")
    new = generate()
    with http_client(timeout=30) as http:
        admin = CloudClient(auth_url, http)
        try:
            admin.authenticate("admin", credentials.admin, "admin")
        except ClientError as exc:
            raise RotateError(f"keystone refused the admin's password from "
                              f"{path_of(state_dir)}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise RotateError(f"keystone does not answer at {auth_url} ({exc}): is the "
                              f"cloud of {state_dir} running?") from exc
        headers = {"X-Auth-Token": admin.token}
        users = http.get(f"{auth_url}/users", params={"name": user, "domain_id": "default"},
                         headers=headers)
        users.raise_for_status()
        found = users.json()["users"]
        if not found:
            raise RotateError(f"keystone has no user {user!r}")
        changed = http.patch(f"{auth_url}/users/{found[0]['id']}",
                             json={"user": {"password": new}}, headers=headers)
        if changed.status_code != 200:
            raise RotateError(f"keystone refused the change ({changed.status_code}): "
                              f"{changed.text[:300]}")
    credentials.set(user, new)
    return new


STATE_DIR = click.option("--state-dir", default=None, type=click.Path(file_okay=False),
                         help="The deployment's state directory (default: the running or "
                              "last cloud's, as `novalab trace list` finds it).")


@click.group()
def credentials():
    """The deployment's passwords: admin's and the service users'.

    \b
    Each deployment (boot, serve, up, the lab cloud) makes its own the first time it
    starts and keeps them in STATE_DIR/credentials.json, readable only by you.
    The personas demo, reader and alt_demo use the documented password "novalab".
    """


@credentials.command("show")
@click.argument("user", required=False)
@STATE_DIR
def show(user, state_dir):
    """Print USER's password (default: every generated one, as USER PASSWORD lines)."""
    path = _state_dir(state_dir)
    known = Credentials.of(path)
    if user in PERSONAS:
        click.echo(PERSONA_PASSWORD)
        return
    try:
        passwords = known.users()
    except PermissionError:
        _fail(f"{path_of(path)} is not yours to read: ask the deployment's owner")
    if not passwords:
        _fail(f"{path_of(path)} holds no passwords: the deployment makes them on first start")
    if user:
        if user not in passwords:
            _fail(f"no password for {user!r}; known: {', '.join(sorted(passwords))}")
        click.echo(passwords[user])
        return
    for name in sorted(passwords):
        click.echo(f"{name} {passwords[name]}")


@credentials.command("rotate")
@click.argument("user")
@STATE_DIR
def rotate_command(user, state_dir):
    """Give USER (admin or a service user) a new password, in keystone and in the
    deployment's file; every service keeps working."""
    path = _state_dir(state_dir)
    try:
        rotate(path, user)
    except RotateError as exc:
        _fail(str(exc))
    click.echo(f"{user}'s password changed; `novalab credentials show {user}` prints it")


def register(group: click.Group) -> click.Group:
    group.add_command(credentials)
    return group
