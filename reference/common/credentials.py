"""The deployment's passwords: made once per state dir, kept there, never guessed.

A shared cloud cannot have a well-known admin password, nor well-known service
users' ones: whoever logs in as ``nova`` or ``neutron`` (role ``service``) may
do what Nova and Neutron do for each other, in every project. So each
deployment (``boot``, ``serve``, ``up``, the lab cloud) generates the
passwords of ``admin`` and of every service user the first time it starts, and
keeps them in ``STATE_DIR/credentials.json`` (mode 0600), where DevStack keeps
them in ``local.conf`` and each service's ``[keystone_authtoken] password``.
``novalab credentials show`` prints them to the deployment's owner, ``novalab
credentials rotate USER`` changes one while everything runs.

The single-learner personas ``demo``, ``reader`` and ``alt_demo`` keep one
documented password, :data:`PERSONA_PASSWORD`: Tempest's configuration and the
docs log in with it, and they hold no power over anyone else's project.
Learners added for a class get generated passwords of their own (their roster,
not this file).

A compute host on another machine has no copy of the controller's state dir:
copy the controller's ``credentials.json`` into its state dir, or point
``NOVALAB_CREDENTIALS`` at it (docs/multihost.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

PERSONA_PASSWORD = "novalab"
PERSONAS = frozenset({"demo", "reader", "alt_demo"})
FILE = "credentials.json"
ENV_FILE = "NOVALAB_CREDENTIALS"


class MissingCredentials(RuntimeError):
    """The state dir holds no password for a user a service needs; the message says why."""


def generate() -> str:
    """A new password: 24 URL-safe characters (144 bits), easy to paste."""
    return secrets.token_urlsafe(18)


def path_of(state_dir: str | os.PathLike) -> Path:
    """Where the deployment of ``state_dir`` keeps its passwords."""
    return Path(os.environ.get(ENV_FILE) or Path(state_dir) / FILE)


class Credentials:
    """The passwords of one deployment, read from its file (again whenever it changes).

    Services hold one and ask :meth:`password_for` each time they log in, so a
    password `rotate` changed is picked up without a restart.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._seen: tuple[float, int] | None = None
        self._passwords: dict[str, str] = {}

    @classmethod
    def of(cls, state_dir: str | os.PathLike) -> Credentials:
        return cls(path_of(state_dir))

    def _read(self) -> dict[str, str]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        with self._lock:
            if self._seen != (stat.st_mtime, stat.st_size):
                self._passwords = dict(json.loads(self.path.read_text()).get("passwords", {}))
                self._seen = (stat.st_mtime, stat.st_size)
            return self._passwords

    def password_for(self, user: str) -> str:
        """``user``'s password: the personas' documented one, else this deployment's."""
        if user in PERSONAS:
            return PERSONA_PASSWORD
        password = self._read().get(user)
        if password is None:
            raise MissingCredentials(
                f"{self.path} holds no password for {user!r}: the deployment makes it when "
                "keystone first starts; a host without the controller's state dir needs a "
                f"copy of its {FILE} (or {ENV_FILE}=PATH)")
        return password

    @property
    def admin(self) -> str:
        return self.password_for("admin")

    def users(self) -> dict[str, str]:
        """Every generated password, by user (what `credentials show` prints)."""
        return dict(self._read())

    # Writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict[str, str]]:
        """A locked read-modify-write of the file, written whole, mode 0600."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                passwords = dict(json.loads(self.path.read_text()).get("passwords", {}))
            except FileNotFoundError:
                passwords = {}
            before = dict(passwords)
            yield passwords
            if passwords != before:
                tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as out:
                    json.dump({"passwords": passwords}, out, indent=1, sort_keys=True)
                tmp.replace(self.path)

    def ensure(self, users: Iterable[str]) -> list[str]:
        """Generate a password for each of ``users`` (personas excepted) that has none;
        returns the users that got one now (a state dir made before they existed, or
        a new one)."""
        with self._editing() as passwords:
            made = [u for u in users if u not in PERSONAS and u not in passwords]
            for user in made:
                passwords[user] = generate()
        return made

    def set(self, user: str, password: str) -> None:
        """Record ``user``'s new password (keystone must already have it: see rotate)."""
        if user in PERSONAS:
            raise ValueError(f"{user} is a persona: its password is the documented one")
        with self._editing() as passwords:
            passwords[user] = password
