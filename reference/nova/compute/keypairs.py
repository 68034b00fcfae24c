"""Key pairs (``nova/compute/api.py`` ``KeypairAPI``, ``nova/objects/keypair.py``).

A key pair is a *user's* public key under a name of their choosing: another
user of the same project neither sees nor uses it (an admin may act for any
user from microversion 2.10). ``import_key_pair`` stores a public key the user
made themselves, after loading it to compute its fingerprint (a key that does
not load is a 400); ``create_key_pair`` generates the pair, stores the public
half and hands the private half back once, never to be stored. Both are
bounded by the ``key_pairs`` quota, counted per user against the project's
limit (upstream's ``Quotas.check_deltas(context, {'key_pairs': 1}, user_id)``).

The rows live in the API database's ``key_pairs`` table (novalab's main
database). A server booted with ``key_name`` keeps a copy of the pair
(``instances.key_data`` and ``keypairs``), so deleting the pair later does not
change what the guest is served.
"""

from __future__ import annotations

from opentelemetry import trace
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database
from novalab.reference.common.quota import UNLIMITED, QuotaEngine
from novalab.reference.nova import crypto, exception
from novalab.reference.nova.db.api_models import KeyPair
from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream

KEYPAIR_TYPE_SSH = "ssh"
KEYPAIR_TYPE_X509 = "x509"
_API = "nova/compute/api.py"


def _to_dict(row: KeyPair) -> dict:
    """The ``KeyPair`` object's fields; ``deleted`` and ``deleted_at`` as the API shows
    them for a row of a table with no soft delete."""
    return {"id": row.id, "name": row.name, "user_id": row.user_id,
            "fingerprint": row.fingerprint, "public_key": row.public_key, "type": row.type,
            "created_at": row.created_at, "updated_at": row.updated_at,
            "deleted": False, "deleted_at": None}


def instance_keypair(keypair: dict) -> dict:
    """What an instance keeps of its key pair (``instance_extra.keypairs``): JSON only."""
    return {key: keypair[key] for key in ("name", "user_id", "type", "public_key",
                                          "fingerprint")}


# nova/objects/keypair.py's database functions -------------------------------------------

def key_pair_get(db: Database, user_id: str, name: str) -> dict:
    with db.session() as session:
        row = session.scalars(select(KeyPair).where(KeyPair.user_id == user_id,
                                                    KeyPair.name == name)).first()
        if row is None:
            raise exception.KeypairNotFound(user_id=user_id, name=name)
        return _to_dict(row)


def key_pair_get_all_by_user(db: Database, user_id: str, limit: int | None = None,
                             marker: str | None = None) -> list[dict]:
    """A user's key pairs by name; after ``marker`` (a name) and at most ``limit``."""
    query = select(KeyPair).where(KeyPair.user_id == user_id).order_by(KeyPair.name)
    with db.session() as session:
        if marker is not None:
            if session.scalars(query.where(KeyPair.name == marker)).first() is None:
                raise exception.MarkerNotFound(marker=marker)
            query = query.where(KeyPair.name > marker)
        if limit is not None:
            query = query.limit(limit)
        return [_to_dict(row) for row in session.scalars(query)]


def key_pair_count_by_user(db: Database, user_id: str) -> int:
    with db.session() as session:
        return session.scalar(select(func.count(KeyPair.id))
                              .where(KeyPair.user_id == user_id))


def key_pair_create(db: Database, values: dict) -> dict:
    try:
        with db.session() as session:
            row = KeyPair(**values)
            session.add(row)
            session.flush()
            return _to_dict(row)
    except IntegrityError as exc:  # uniq_key_pairs0user_id0name
        raise exception.KeyPairExists(key_name=values["name"]) from exc


def key_pair_destroy(db: Database, user_id: str, name: str) -> None:
    with db.session() as session:
        result = session.execute(delete(KeyPair).where(KeyPair.user_id == user_id,
                                                       KeyPair.name == name))
        if not result.rowcount:
            raise exception.KeypairNotFound(user_id=user_id, name=name)


class KeypairAPI:
    """Subset of the compute API for managing key pairs."""

    def __init__(self, db: Database, quotas: QuotaEngine, tracer):
        self.db = db
        self.quotas = quotas
        self.tracer = tracer

    def _check_key_pair_quotas(self, context: RequestContext, user_id: str,
                               delta: int = 1) -> None:
        """The user's key pairs, plus ``delta``, within the project's ``key_pairs`` limit
        (``delta`` 0 is the recheck after a create)."""
        limit = self.quotas.limits(context.project_id)["key_pairs"]
        if limit != UNLIMITED and key_pair_count_by_user(self.db, user_id) + delta > limit:
            raise exception.KeypairLimitExceeded()

    @staticmethod
    def _record(keypair: dict) -> None:
        span = trace.get_current_span()
        span.set_attribute(attr.NOVA_KEYPAIR_NAME, keypair["name"])
        span.set_attribute(attr.NOVA_KEYPAIR_TYPE, keypair["type"])
        span.set_attribute(attr.NOVA_KEYPAIR_FINGERPRINT, keypair["fingerprint"])

    @upstream(_API, "KeypairAPI.import_key_pair")
    def import_key_pair(self, context: RequestContext, user_id: str, key_name: str,
                        public_key: str, key_type: str = KEYPAIR_TYPE_SSH) -> dict:
        """Store a public key the user made (its fingerprint proves it loads)."""
        self._check_key_pair_quotas(context, user_id)
        fingerprint = self._generate_fingerprint(public_key, key_type)
        keypair = key_pair_create(self.db, {
            "user_id": user_id, "name": key_name, "type": key_type,
            "fingerprint": fingerprint, "public_key": public_key})
        self._record(keypair)
        return keypair

    @upstream(_API, "KeypairAPI.create_key_pair")
    def create_key_pair(self, context: RequestContext, user_id: str, key_name: str,
                        key_type: str = KEYPAIR_TYPE_SSH) -> tuple[dict, str]:
        """Generate a pair; (the stored key pair, its private key, which is not stored)."""
        self._check_key_pair_quotas(context, user_id)
        private_key, public_key, fingerprint = self._generate_key_pair(user_id, key_type)
        keypair = key_pair_create(self.db, {
            "user_id": user_id, "name": key_name, "type": key_type,
            "fingerprint": fingerprint, "public_key": public_key})
        # CONF.quota.recheck_quota: two creates checked at once may both have passed.
        try:
            self._check_key_pair_quotas(context, user_id, delta=0)
        except exception.KeypairLimitExceeded:
            key_pair_destroy(self.db, user_id, key_name)
            raise
        self._record(keypair)
        return keypair, private_key

    @staticmethod
    def _generate_fingerprint(public_key: str, key_type: str) -> str:
        if key_type == KEYPAIR_TYPE_X509:
            return crypto.generate_x509_fingerprint(public_key)
        return crypto.generate_fingerprint(public_key)

    @staticmethod
    def _generate_key_pair(user_id: str, key_type: str) -> tuple[str, str, str]:
        if key_type == KEYPAIR_TYPE_X509:
            return crypto.generate_winrm_x509_cert(user_id)
        return crypto.generate_key_pair()

    @upstream(_API, "KeypairAPI.delete_key_pair")
    def delete_key_pair(self, context: RequestContext, user_id: str, key_name: str) -> None:
        keypair = self.get_key_pair(context, user_id, key_name)
        key_pair_destroy(self.db, user_id, key_name)
        self._record(keypair)

    @upstream(_API, "KeypairAPI.get_key_pairs")
    def get_key_pairs(self, context: RequestContext, user_id: str, limit: int | None = None,
                      marker: str | None = None) -> list[dict]:
        return key_pair_get_all_by_user(self.db, user_id, limit=limit, marker=marker)

    @upstream(_API, "KeypairAPI.get_key_pair")
    def get_key_pair(self, context: RequestContext, user_id: str, key_name: str) -> dict:
        return key_pair_get(self.db, user_id, key_name)
