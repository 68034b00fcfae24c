"""``novalab class``: the teacher's commands for a class sharing one cloud.

    novalab class add NAME...      a project, user, network and quotas per learner
    novalab class remove NAME...   everything a learner's project owns, then it
    novalab class list             the learners: project, network, address range
    novalab class status           each learner's labs: attempts, last grade, done

They are a client of the cloud's lab service (``/v1/learners``, ``/v1/attempts``),
as an admin: the ``OS_*`` variables' user if it is one, else the deployment's
admin (its ``credentials.json``, readable by whoever runs the cloud). The
passwords ``add`` makes are answered once and kept in the roster, a file only
its owner reads (mode 0600 from its creation), never printed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from novalab.labs.client import LabService, ServiceError
from novalab.tracing.cli import PLAIN

out = Console(**PLAIN)
err = Console(stderr=True, **PLAIN)
ROSTER = "class-roster.json"


def _fail(message: str, code: int = 2):
    err.print(Text.assemble(("novalab class:", "red"), f" {message}"))
    raise SystemExit(code)


class Teacher(LabService):
    """An admin's session with the lab service: the class's learners."""

    def __init__(self, auth_url: str, user: str, password: str, project: str):
        super().__init__(auth_url, user, password, project)
        self.auth_url = auth_url

    def learners(self) -> list[dict]:
        return self._call("GET", "/learners")["learners"]

    def standing(self) -> list[dict]:
        return self._call("GET", "/class")["standing"]

    def add(self, name: str, quotas: dict[str, int]) -> dict:
        body = {"name": name, **({"quotas": quotas} if quotas else {})}
        return self._call("POST", "/learners", {"learner": body}, ok=(201,))["learner"]

    def remove(self, name: str) -> dict:
        return self._call("DELETE", f"/learners/{name}")["removed"]


def _state_dir(state_dir: str | None) -> Path | None:
    from novalab.tracing import store

    try:
        return store.locate(state_dir)
    except store.NoTrace:
        return None


def login(state_dir: str | None) -> Teacher:
    """The ``OS_*`` user's session if it is an admin; else the deployment's admin."""
    from novalab.reference.common.credentials import Credentials, path_of
    from novalab.reference.deploy.credentials_cli import auth_url_of

    env = os.environ
    if env.get("OS_USERNAME") and env.get("OS_AUTH_URL") and env.get("OS_PASSWORD"):
        teacher = None
        try:
            teacher = Teacher(env["OS_AUTH_URL"], env["OS_USERNAME"], env["OS_PASSWORD"],
                              env.get("OS_PROJECT_NAME") or env["OS_USERNAME"])
            teacher.learners()  # 403 unless an admin
            return teacher
        except ServiceError as exc:
            if teacher is not None:
                teacher.close()
            if exc.status not in (401, 403):
                _fail(str(exc))
    path = _state_dir(state_dir)
    if path is None:
        _fail("no admin to act as: set OS_* to an admin's credentials, or run this where "
              "the cloud's state dir is (--state-dir)")
    auth_url = auth_url_of(path)
    if auth_url is None:
        _fail(f"no cloud runs from {path}: start it (`novalab serve`), or give --state-dir")
    try:
        password = Credentials.of(path).admin
    except PermissionError:
        _fail(f"{path_of(path)} is not yours to read: ask the cloud's owner, or set OS_* to "
              "an admin's credentials")
    except Exception as exc:  # MissingCredentials: a deployment without its file
        _fail(str(exc))
    try:
        return Teacher(auth_url, "admin", password, "admin")
    except ServiceError as exc:
        _fail(str(exc))


# The roster --------------------------------------------------------------------------------

def roster_path(roster: str | None, state_dir: str | None) -> Path:
    """``--roster``, else STATE_DIR/class-roster.json, else ./class-roster.json."""
    if roster:
        return Path(roster)
    path = _state_dir(state_dir)
    return (path if path is not None else Path.cwd()) / ROSTER


@contextlib.contextmanager
def editing(path: Path):
    """The roster's learners, by name, to change; written whole, created 0600.

    A new file replaces the old one (a rename), so the roster is never readable by
    others, not even for a moment, whatever the old one's mode was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            learners = dict(json.loads(path.read_text()).get("learners", {}))
        except FileNotFoundError:
            learners = {}
        before = json.dumps(learners, sort_keys=True)
        yield learners
        if json.dumps(learners, sort_keys=True) == before:
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump({"learners": learners}, handle, indent=1, sort_keys=True)
        tmp.replace(path)


# Commands ----------------------------------------------------------------------------------

STATE_DIR = click.option("--state-dir", default=None, type=click.Path(file_okay=False),
                         help="The cloud's state directory (default: the running cloud's, "
                              "as `novalab trace list` finds it).")
ROSTER_OPTION = click.option("--roster", default=None, type=click.Path(dir_okay=False),
                             help=f"The roster file (default: STATE_DIR/{ROSTER}), mode 0600.")


def _quotas(values: tuple[str, ...]) -> dict[str, int]:
    from novalab.labs.service.operator import MAX_QUOTAS

    quotas = {}
    for value in values:
        key, _, number = value.partition("=")
        if key not in MAX_QUOTAS or not number.isdigit():
            _fail(f"--quota {value}: KEY=N, KEY one of {', '.join(MAX_QUOTAS)}")
        quotas[key] = int(number)
    return quotas


@click.group("class")
def class_group():
    """The learners of a class sharing this cloud (for the teacher, an admin).

    \b
    Each learner gets a keystone project class-NAME, a user NAME with a generated
    password, a network "private" of their own on a /24 of 10.64.0.0/12, and quotas
    that keep one project from starving the others. The passwords are in the roster
    (STATE_DIR/class-roster.json, mode 0600); hand each learner their line.
    """


@class_group.command("add")
@click.argument("names", nargs=-1, required=True)
@click.option("--quota", "quota", multiple=True, metavar="KEY=N",
              help="Override a default quota (instances, ram, port, gigabytes...); "
                   "repeatable.")
@ROSTER_OPTION
@STATE_DIR
def add(names, quota, roster, state_dir):
    """Add learners NAME... (lowercase, at most 32 characters)."""
    quotas = _quotas(quota)
    path = roster_path(roster, state_dir)
    teacher = login(state_dir)
    failed = 0
    table = Table("learner", "project", "network", "range")
    try:
        for name in names:
            try:
                learner = teacher.add(name, quotas)
            except ServiceError as exc:
                err.print(f"{name}: {exc}")
                failed += 1
                continue
            with editing(path) as learners:
                learners[name] = {
                    "user": name, "password": learner["password"],
                    "project": learner["project"], "project_id": learner["project_id"],
                    "network": learner["network"], "cidr": learner["cidr"],
                    "auth_url": teacher.auth_url}
            table.add_row(name, learner["project"], learner["network"], learner["cidr"])
    finally:
        teacher.close()
    if table.rows:
        out.print(table)
        out.print(f"passwords: {path} (only you can read it)")
    if failed:
        raise SystemExit(1)


@class_group.command("remove")
@click.argument("names", nargs=-1, required=True)
@ROSTER_OPTION
@STATE_DIR
def remove(names, roster, state_dir):
    """Remove learners NAME...: their servers, volumes, ports, network, images, key
    pairs, then their user and project."""
    path = roster_path(roster, state_dir)
    teacher = login(state_dir)
    failed = 0
    try:
        for name in names:
            try:
                removed = teacher.remove(name)
            except ServiceError as exc:
                err.print(f"{name}: {exc}")
                failed += 1
                continue
            if path.exists():
                with editing(path) as learners:
                    learners.pop(name, None)
            counts = ", ".join(f"{n} {what}" for what, n in removed.items() if n)
            out.print(f"{name} removed" + (f" ({counts})" if counts else ""))
    finally:
        teacher.close()
    if failed:
        raise SystemExit(1)


@class_group.command("list")
@ROSTER_OPTION
@STATE_DIR
def list_learners(roster, state_dir):
    """The class's learners: project, network, address range, and whether the roster
    holds their password."""
    path = roster_path(roster, state_dir)
    teacher = login(state_dir)
    try:
        learners = teacher.learners()
    finally:
        teacher.close()
    try:
        known = json.loads(path.read_text()).get("learners", {})
    except (FileNotFoundError, json.JSONDecodeError):
        known = {}
    table = Table("learner", "project", "network", "range", "in roster")
    for learner in learners:
        table.add_row(learner["name"], learner["project"], learner["network"] or "-",
                      learner["cidr"] or "-", "yes" if learner["name"] in known else "no")
    out.print(table)
    if not learners:
        out.print("no learners yet: `novalab class add NAME...`")


def _last_grade(grade: dict | None) -> str:
    """A row's newest grade: checks passed of all."""
    if not grade:
        return "-"
    return f"{grade['checks_passed']}/{grade['checks']}" + (" passed" if grade["passed"] else "")


@class_group.command("status")
@STATE_DIR
def status(state_dir):
    """Each learner's labs: attempts, the last grade, done (passed) or not. The trace
    page shows the same to an admin at /class."""
    teacher = login(state_dir)
    try:
        rows = teacher.standing()
    finally:
        teacher.close()
    table = Table("learner", "lab", "attempts", "last grade", "done")
    for row in rows:
        table.add_row(row["learner"], row["lab"], str(row["attempts"]),
                      _last_grade(row["last_grade"]), row["done"])
    Console(width=max(120, out.width), **PLAIN).print(table)


def register(group: click.Group) -> click.Group:
    group.add_command(class_group)
    return group
