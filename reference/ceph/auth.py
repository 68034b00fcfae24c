"""cephx, in small: the cluster's daemons talk only to holders of its key.

A Ceph cluster with ``auth_cluster_required = cephx`` (every deployment tool's
default) refuses a client that cannot prove it holds a key of the cluster's
keyring: the client names its entity (``client.admin``, ``client.cinder``), the
monitor challenges it, and the tickets it then gets open the OSDs. Without it,
anyone who reaches the ports reads and overwrites any object: another project's
volume, a private image's bytes.

novalab keeps the proof and drops the tickets: on every connection, before any
op, the daemon sends a random challenge and the client answers with its entity
and the HMAC-SHA256 of the challenge under that entity's key
(:meth:`CephX.proof`); a wrong or missing answer is ``EACCES`` and the
connection closes, so a stranger's frame never reaches an op or a span. One
entity, ``client.admin``, serves every daemon and client of a deployment, as
DevStack's single-node Ceph does. No session encryption (msgr2's secure mode):
the bytes cross loopback in clear, as the APIs do without TLS.

The keyring is Ceph's own file format, ``STATE_DIR/ceph/keyring`` (mode 0600),
made once by the deployment (:func:`of` with ``create=True``). A host elsewhere
(a compute node) uses a copy of it, at the same place or where
``NOVALAB_CEPH_KEYRING`` points, as ``/etc/ceph/ceph.client.admin.keyring`` is
copied to compute nodes.
"""

from __future__ import annotations

import base64
import configparser
import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

ENTITY = "client.admin"
ENV_FILE = "NOVALAB_CEPH_KEYRING"
KEY_BYTES = 16  # a cephx secret is 16 random bytes, written in base64


class MissingKeyring(RuntimeError):
    """This host has no keyring for the cluster; the message says which file to copy."""


@dataclass(frozen=True)
class CephX:
    """One entity and its key: what a client proves and a daemon checks."""

    entity: str
    key: bytes

    def proof(self, challenge: bytes) -> str:
        return hmac.new(self.key, challenge, hashlib.sha256).hexdigest()

    def accepts(self, entity: object, challenge: bytes, proof: object) -> bool:
        """Whether ``proof`` shows that its sender holds this entity's key."""
        return (entity == self.entity and isinstance(proof, str) and proof.isascii()
                and hmac.compare_digest(proof, self.proof(challenge)))


def challenge() -> bytes:
    return secrets.token_bytes(16)


def keyring_path(state_dir: str | os.PathLike) -> Path:
    """Where this host's keyring is: ``$NOVALAB_CEPH_KEYRING``, else the state dir's."""
    return Path(os.environ.get(ENV_FILE) or Path(state_dir) / "ceph" / "keyring")


def _render(entity: str, key: bytes) -> str:
    return f"[{entity}]\n\tkey = {base64.b64encode(key).decode()}\n"


def _parse(path: Path) -> CephX:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(), source=str(path))
        key = base64.b64decode(parser.get(ENTITY, "key"), validate=True)
    except (configparser.Error, ValueError) as exc:
        raise MissingKeyring(f"{path} holds no readable key for {ENTITY}: {exc}") from exc
    return CephX(ENTITY, key)


def _create(path: Path) -> None:
    """Write a new keyring unless one is there: link(2) of a whole file, so the
    processes of `up` that start together all read the one that won."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    tmp = Path(name)
    with os.fdopen(fd, "w") as out:
        out.write(_render(ENTITY, secrets.token_bytes(KEY_BYTES)))
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def of(state_dir: str | os.PathLike, create: bool = False) -> CephX:
    """The deployment's ``client.admin`` key. ``create``: make the keyring if this host
    has none (the deployment's own start); otherwise a missing one is an error that
    names the file to copy, never a new key the cluster does not know."""
    path = keyring_path(state_dir)
    if not path.exists():
        if not create:
            raise MissingKeyring(
                f"no Ceph keyring at {path}: the deployment makes it when its monitor "
                f"first starts; a host without the controller's state dir needs a copy of "
                f"its ceph/keyring (or {ENV_FILE}=PATH)")
        _create(path)
    return _parse(path)
