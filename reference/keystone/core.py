"""Keystone's work: check a password, issue and validate tokens, build the catalog.

The managers are named after Keystone's own (``keystone/identity/core.py``,
``keystone/token/provider.py``, ``keystone/catalog/core.py``) and their calls are
traced as spans standing for those upstream functions.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import select

from novalab.reference.common import exception
from novalab.reference.common.db import Database, utcnow
from novalab.reference.keystone.models import (
    Assignment,
    CatalogEndpoint,
    Project,
    Region,
    Role,
    Token,
    User,
)
from novalab.reference.keystone.token_cache import TokenCache
from novalab.tracing.spans import upstream

TOKEN_TTL = timedelta(hours=1)
REGION = "RegionOne"  # DevStack's REGION_NAME, the region of every endpoint here
# The role implications ``keystone-manage bootstrap`` creates, in order of use.
IMPLIED_ROLES = (("admin", "member"), ("member", "reader"))
_PBKDF2_ROUNDS = 20000


def hash_password(password: str, salt: bytes | None = None) -> str:
    """PBKDF2-SHA512, stored as ``pbkdf2_sha512$rounds$salt$hash`` (hex)."""
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, _PBKDF2_ROUNDS)
    return f"pbkdf2_sha512${_PBKDF2_ROUNDS}${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    try:
        _scheme, rounds, salt, digest = stored.split("$")
    except ValueError:
        return False
    candidate = hashlib.pbkdf2_hmac("sha512", password.encode(), bytes.fromhex(salt), int(rounds))
    return hmac.compare_digest(candidate.hex(), digest)


def token_hash(token_id: str) -> str:
    return hashlib.sha256(token_id.encode()).hexdigest()


def isotime(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Keystone:
    """Identity, token and catalog managers over one database."""

    def __init__(self, db: Database, tracer, *, cache_tokens: bool = False):
        self.db = db
        self.tracer = tracer
        # The service's own Keystone caches validations; a short-lived one (reading
        # the catalog for `up`) does not.
        self.token_cache = TokenCache(db) if cache_tokens else None

    # Identity -----------------------------------------------------------------------------

    @upstream("keystone/identity/core.py", "Manager.authenticate")
    def authenticate(self, user_ref: dict, password: str) -> dict:
        """Find the user by id or name+domain and check the password."""
        with self.db.session() as session:
            query = select(User)
            if user_ref.get("id"):
                query = query.where(User.id == user_ref["id"])
            else:
                domain = user_ref.get("domain") or {}
                query = query.where(User.name == user_ref.get("name"),
                                    User.domain_id == _domain_id(domain))
            user = session.scalars(query).first()
            if user is None or not user.enabled or not check_password(password, user.password_hash):
                raise exception.NotAuthorized("The request you have made requires authentication.")
            return {"id": user.id, "name": user.name, "domain_id": user.domain_id,
                    "default_project_id": user.default_project_id}

    def find_project(self, project_ref: dict) -> dict:
        with self.db.session() as session:
            query = select(Project)
            if project_ref.get("id"):
                query = query.where(Project.id == project_ref["id"])
            else:
                domain = project_ref.get("domain") or {}
                query = query.where(Project.name == project_ref.get("name"),
                                    Project.domain_id == _domain_id(domain))
            project = session.scalars(query).first()
            if project is None or not project.enabled:
                raise exception.NotAuthorized("Could not find project: "
                                              f"{project_ref.get('id') or project_ref.get('name')}")
            return {"id": project.id, "name": project.name, "domain_id": project.domain_id}

    def roles_for(self, user_id: str, project_id: str) -> list[dict]:
        """The user's roles on the project, with the roles they imply.

        ``keystone-manage bootstrap`` makes ``admin`` imply ``member`` and ``member``
        imply ``reader``, and a token lists the implied roles too: a user granted
        only ``member`` may still do what readers may.
        """
        with self.db.session() as session:
            query = (select(Role).join(Assignment, Assignment.role_id == Role.id)
                     .where(Assignment.user_id == user_id, Assignment.project_id == project_id))
            names = {r.name for r in session.scalars(query)}
            implied = set(names)
            for role, implies in IMPLIED_ROLES:
                if role in implied:
                    implied.add(implies)
            rows = session.scalars(select(Role).where(Role.name.in_(implied))
                                   .order_by(Role.name))
            return [{"id": r.id, "name": r.name} for r in rows]

    # Tokens -------------------------------------------------------------------------------

    @upstream("keystone/token/provider.py", "Manager.issue_token")
    def issue_token(self, user: dict, methods: list[str], project: dict | None) -> tuple[str, dict]:
        """Mint a token, save it in the token store, return ``(token_id, token body)``."""
        roles = []
        if project is not None:
            roles = self.roles_for(user["id"], project["id"])
            if not roles:
                raise exception.NotAuthorized(
                    f"User {user['id']} has no access to project {project['id']}")
        token_id = secrets.token_hex(16)
        now = utcnow()
        record = Token(id_hash=token_hash(token_id), user_id=user["id"],
                       project_id=project["id"] if project else None, methods=methods,
                       audit_id=secrets.token_urlsafe(16)[:22], issued_at=now,
                       expires_at=now + TOKEN_TTL)
        with self.db.session() as session:
            session.add(record)
        return token_id, self._token_body(record, user, project, roles)

    @upstream("keystone/token/provider.py", "Manager.validate_token")
    def validate_token(self, token_id: str, *, include_catalog: bool = True) -> dict:
        """The token's body if it is in the store, unexpired and not revoked."""
        key = token_hash(token_id)
        cached = self.token_cache.get(key) if self.token_cache else None
        if cached is not None:
            record, user_d, project_d, roles = cached
            if record.expires_at > utcnow():
                return self._token_body(record, user_d, project_d, list(roles),
                                        include_catalog)
        generation = self.token_cache.generation if self.token_cache else 0
        record, user_d, project_d, roles = self._validate_in_store(token_id)
        if self.token_cache is not None:
            self.token_cache.put(key, (record, user_d, project_d, list(roles)), generation)
        return self._token_body(record, user_d, project_d, roles, include_catalog)

    def _validate_in_store(self, token_id: str) -> tuple:
        with self.db.session() as session:
            record = session.get(Token, token_hash(token_id))
            if record is None or not record.valid or record.expires_at <= utcnow():
                raise exception.NotFound(f"Could not find token: {token_id[:8]}...")
            user = session.get(User, record.user_id)
            project = session.get(Project, record.project_id) if record.project_id else None
            # A token dies with its user's or project's being disabled or deleted, even
            # if it was issued before (upstream: revocation events on disable/delete).
            if user is None or not user.enabled or (
                    record.project_id and (project is None or not project.enabled)):
                raise exception.NotFound(f"Could not find token: {token_id[:8]}...")
            user_d = {"id": user.id, "name": user.name, "domain_id": user.domain_id}
            project_d = ({"id": project.id, "name": project.name, "domain_id": project.domain_id}
                         if project else None)
        roles = self.roles_for(user_d["id"], project_d["id"]) if project_d else []
        return record, user_d, project_d, roles

    def revoke_token(self, token_id: str) -> None:
        with self.db.session() as session:
            record = session.get(Token, token_hash(token_id))
            if record is None or not record.valid:
                raise exception.NotFound("Could not find token.")
            record.valid = False

    def _token_body(self, record: Token, user: dict, project: dict | None, roles: list[dict],
                    include_catalog: bool = True) -> dict:
        domain = {"id": user["domain_id"], "name": "Default"}
        body = {
            "methods": record.methods,
            "user": {"id": user["id"], "name": user["name"], "domain": domain,
                     "password_expires_at": None},
            "audit_ids": [record.audit_id],
            "expires_at": isotime(record.expires_at),
            "issued_at": isotime(record.issued_at),
        }
        if project is not None:
            body["project"] = {"id": project["id"], "name": project["name"],
                               "domain": {"id": project["domain_id"], "name": "Default"}}
            body["is_domain"] = False
            body["roles"] = roles
            if include_catalog:
                body["catalog"] = self.catalog(project["id"])
        return body

    # Catalog ------------------------------------------------------------------------------

    @upstream("keystone/catalog/core.py", "Manager.get_v3_catalog")
    def catalog(self, project_id: str | None = None) -> list[dict]:
        with self.db.session() as session:
            rows = list(session.scalars(select(CatalogEndpoint).order_by(CatalogEndpoint.id)))
        services: dict[str, dict] = {}
        for row in rows:
            service = services.setdefault(row.service_id, {
                "id": row.service_id, "type": row.service_type, "name": row.service_name,
                "endpoints": []})
            url = row.url.replace("$(project_id)s", project_id or "")
            service["endpoints"].append({"id": row.id, "interface": row.interface,
                                         "region": row.region, "region_id": row.region,
                                         "url": url})
        return list(services.values())

    def register_endpoint(self, service_type: str, service_name: str, url: str) -> None:
        """Add or replace a service's public, internal and admin endpoints."""
        with self.db.session() as session:
            for row in session.scalars(select(CatalogEndpoint).where(
                    CatalogEndpoint.service_type == service_type)):
                session.delete(row)
            service_id = uuid.uuid5(uuid.NAMESPACE_URL, service_type).hex
            for interface in ("public", "internal", "admin"):
                session.add(CatalogEndpoint(id=uuid.uuid4().hex, service_id=service_id,
                                            service_type=service_type, service_name=service_name,
                                            interface=interface, region=REGION, url=url))

    # Bootstrap ----------------------------------------------------------------------------

    def bootstrap(self, users: dict[str, dict], reset_passwords: Iterable[str] = ()) -> None:
        """Seed roles, projects and users (``keystone-manage bootstrap``).

        Idempotent by name: a state dir made by an older novalab gains the users
        and projects added since. Of those it has, only the passwords of
        ``reset_passwords`` change, to the ones given, as ``keystone-manage
        bootstrap --bootstrap-password`` resets the admin's: the deployment's file
        of passwords is the truth for its own users.
        """
        with self.db.session() as session:
            if session.get(Region, REGION) is None:
                session.add(Region(id=REGION, description=""))
            roles = {r.name: r for r in session.scalars(select(Role))}
            for name in ("admin", "member", "reader", "service"):
                if name not in roles:
                    roles[name] = Role(id=uuid.uuid4().hex, name=name)
                    session.add(roles[name])
            projects = {p.name: p for p in session.scalars(
                select(Project).where(Project.domain_id == "default"))}
            for spec in users.values():
                name = spec["project"]
                if name not in projects:
                    projects[name] = Project(id=uuid.uuid4().hex, name=name,
                                             description=f"novalab {name} project")
                    session.add(projects[name])
            session.flush()
            existing = {u.name: u for u in session.scalars(
                select(User).where(User.domain_id == "default"))}
            for user_name, spec in users.items():
                if user_name in existing:
                    user = existing[user_name]
                    if user_name in reset_passwords and not check_password(
                            spec["password"], user.password_hash):
                        user.password_hash = hash_password(spec["password"])
                    continue
                project = projects[spec["project"]]
                user = User(id=uuid.uuid4().hex, name=user_name,
                            password_hash=hash_password(spec["password"]),
                            default_project_id=project.id)
                session.add(user)
                session.flush()
                for role_name in spec["roles"]:
                    session.add(Assignment(user_id=user.id, project_id=project.id,
                                           role_id=roles[role_name].id))


def _domain_id(domain: dict) -> str:
    if domain.get("id"):
        return domain["id"]
    name = domain.get("name", "Default")
    return "default" if name.lower() == "default" else name
