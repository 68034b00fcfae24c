"""Users, projects and role grants: what an admin manages through ``/v3``.

Upstream splits this over three managers (``keystone/identity/core.py`` for
users, ``keystone/resource/core.py`` for projects, ``keystone/assignment/core.py``
for roles and grants); here they share one small class over the same tables the
token provider reads.

Disabling or deleting a user or a project revokes its tokens at once, as
Keystone's revocation events do: the token rows are marked invalid, and token
validation also refuses a token whose user or project is disabled or gone.
"""

from __future__ import annotations

import uuid

from opentelemetry import trace
from sqlalchemy import delete, select, update

from novalab.reference.common import exception
from novalab.reference.keystone.core import hash_password
from novalab.reference.keystone.models import Assignment, Project, Role, Token, User
from novalab.tracing.spans import upstream


def user_view(user: User) -> dict:
    extra = user.extra or {}
    return {"id": user.id, "name": user.name, "domain_id": user.domain_id,
            "enabled": user.enabled, "default_project_id": user.default_project_id,
            "password_expires_at": None, "options": {},
            **{key: extra[key] for key in ("description", "email") if key in extra}}


def project_view(project: Project) -> dict:
    return {"id": project.id, "name": project.name, "domain_id": project.domain_id,
            "description": project.description, "enabled": project.enabled,
            "is_domain": False, "parent_id": project.domain_id, "tags": [], "options": {}}


def role_view(role: Role) -> dict:
    return {"id": role.id, "name": role.name, "domain_id": None, "description": None,
            "options": {}}


class Conflict(exception.Conflict):
    msg_fmt = ("Conflict occurred attempting to store %(type)s - Duplicate entry found "
               "with name %(name)s.")


class IdentityAdmin:
    """Create, read, change and delete users, projects and role grants."""

    def __init__(self, db, tracer=None):
        self.db = db
        self.tracer = tracer or trace.NoOpTracer()

    # Users --------------------------------------------------------------------------------

    def list_users(self, name: str | None = None, enabled: bool | None = None) -> list[dict]:
        query = select(User).order_by(User.name)
        if name is not None:
            query = query.where(User.name == name)
        if enabled is not None:
            query = query.where(User.enabled == enabled)
        with self.db.session() as session:
            return [user_view(u) for u in session.scalars(query)]

    def get_user(self, user_id: str) -> dict:
        with self.db.session() as session:
            return user_view(self._user(session, user_id))

    def create_user(self, values: dict) -> dict:
        with self.db.session() as session:
            domain_id = values.get("domain_id", "default")
            if session.scalars(select(User).where(User.name == values["name"],
                                                  User.domain_id == domain_id)).first():
                raise Conflict(type="user", name=values["name"])
            if values.get("default_project_id"):
                self._project(session, values["default_project_id"])
            user = User(id=uuid.uuid4().hex, name=values["name"], domain_id=domain_id,
                        password_hash=hash_password(values.get("password") or uuid.uuid4().hex),
                        enabled=values.get("enabled", True),
                        default_project_id=values.get("default_project_id"),
                        extra=_extra(values, {}))
            session.add(user)
            session.flush()
            return user_view(user)

    def update_user(self, user_id: str, values: dict) -> dict:
        with self.db.session() as session:
            user = self._user(session, user_id)
            if "name" in values and values["name"] != user.name and session.scalars(
                    select(User).where(User.name == values["name"],
                                       User.domain_id == user.domain_id)).first():
                raise Conflict(type="user", name=values["name"])
            for key in ("name", "enabled", "default_project_id"):
                if key in values:
                    setattr(user, key, values[key])
            if values.get("password"):
                user.password_hash = hash_password(values["password"])
            user.extra = _extra(values, user.extra or {})
            if values.get("enabled") is False or values.get("password"):
                # A disabled user, or one whose password changed, loses its tokens.
                _revoke(session, Token.user_id == user.id)
            return user_view(user)

    def delete_user(self, user_id: str) -> None:
        with self.db.session() as session:
            user = self._user(session, user_id)
            _revoke(session, Token.user_id == user.id)
            session.execute(delete(Assignment).where(Assignment.user_id == user.id))
            session.delete(user)

    # Projects -----------------------------------------------------------------------------

    def list_projects(self, name: str | None = None, enabled: bool | None = None,
                      ids: set[str] | None = None) -> list[dict]:
        query = select(Project).order_by(Project.name)
        if name is not None:
            query = query.where(Project.name == name)
        if enabled is not None:
            query = query.where(Project.enabled == enabled)
        if ids is not None:
            query = query.where(Project.id.in_(ids))
        with self.db.session() as session:
            return [project_view(p) for p in session.scalars(query)]

    def get_project(self, project_id: str) -> dict:
        with self.db.session() as session:
            return project_view(self._project(session, project_id))

    def create_project(self, values: dict) -> dict:
        with self.db.session() as session:
            domain_id = values.get("domain_id", "default")
            if session.scalars(select(Project).where(Project.name == values["name"],
                                                     Project.domain_id == domain_id)).first():
                raise Conflict(type="project", name=values["name"])
            parent = values.get("parent_id")
            if parent not in (None, domain_id):
                raise exception.ValidationError(
                    detail="Projects here cannot be nested: parent_id must be the domain.")
            project = Project(id=uuid.uuid4().hex, name=values["name"], domain_id=domain_id,
                              description=values.get("description") or "",
                              enabled=values.get("enabled", True))
            session.add(project)
            session.flush()
            return project_view(project)

    def update_project(self, project_id: str, values: dict) -> dict:
        with self.db.session() as session:
            project = self._project(session, project_id)
            if "name" in values and values["name"] != project.name and session.scalars(
                    select(Project).where(Project.name == values["name"],
                                          Project.domain_id == project.domain_id)).first():
                raise Conflict(type="project", name=values["name"])
            for key in ("name", "enabled"):
                if key in values:
                    setattr(project, key, values[key])
            if "description" in values:
                project.description = values["description"] or ""
            if values.get("enabled") is False:
                _revoke(session, Token.project_id == project.id)
            return project_view(project)

    def delete_project(self, project_id: str) -> None:
        """Delete the project and its grants (its servers, volumes... are left, as upstream)."""
        with self.db.session() as session:
            project = self._project(session, project_id)
            _revoke(session, Token.project_id == project.id)
            session.execute(delete(Assignment).where(Assignment.project_id == project.id))
            session.delete(project)

    def user_projects(self, user_id: str) -> list[dict]:
        with self.db.session() as session:
            ids = set(session.scalars(select(Assignment.project_id).where(
                Assignment.user_id == user_id)))
        return self.list_projects(ids=ids, enabled=True)

    # Roles and grants ---------------------------------------------------------------------

    def list_roles(self, name: str | None = None) -> list[dict]:
        query = select(Role).order_by(Role.name)
        if name is not None:
            query = query.where(Role.name == name)
        with self.db.session() as session:
            return [role_view(r) for r in session.scalars(query)]

    def get_role(self, role_id: str) -> dict:
        with self.db.session() as session:
            role = session.get(Role, role_id)
            if role is None:
                raise exception.NotFound(f"Could not find role: {role_id}.")
            return role_view(role)

    def grant(self, project_id: str, user_id: str, role_id: str) -> None:
        with self.db.session() as session:
            self._project(session, project_id)
            self._user(session, user_id)
            if session.get(Role, role_id) is None:
                raise exception.NotFound(f"Could not find role: {role_id}.")
            if session.get(Assignment, (user_id, project_id, role_id)) is None:
                session.add(Assignment(user_id=user_id, project_id=project_id, role_id=role_id))

    def check_grant(self, project_id: str, user_id: str, role_id: str) -> None:
        with self.db.session() as session:
            if session.get(Assignment, (user_id, project_id, role_id)) is None:
                raise exception.NotFound(
                    f"Could not find role assignment with role: {role_id}, user or group: "
                    f"{user_id}, project, domain, or system: {project_id}.")

    def revoke_grant(self, project_id: str, user_id: str, role_id: str) -> None:
        with self.db.session() as session:
            grant = session.get(Assignment, (user_id, project_id, role_id))
            if grant is None:
                raise exception.NotFound(f"Could not find role assignment: {role_id}.")
            session.delete(grant)
            # Tokens carry their roles as of validation here, so a revoked grant takes
            # effect at the next validation; upstream also revokes the user's tokens.
            _revoke(session, (Token.user_id == user_id) & (Token.project_id == project_id))

    @upstream("keystone/assignment/core.py", "Manager.list_role_assignments")
    def role_assignments(self, user_id: str | None = None, project_id: str | None = None,
                         include_names: bool = False, role_id: str | None = None) -> list[dict]:
        query = select(Assignment).order_by(Assignment.project_id, Assignment.user_id,
                                            Assignment.role_id)
        if user_id:
            query = query.where(Assignment.user_id == user_id)
        if project_id:
            query = query.where(Assignment.project_id == project_id)
        if role_id:
            query = query.where(Assignment.role_id == role_id)
        with self.db.session() as session:
            found = []
            for grant in session.scalars(query):
                role = {"id": grant.role_id}
                user = {"id": grant.user_id}
                project = {"id": grant.project_id}
                if include_names:
                    domain = {"id": "default", "name": "Default"}
                    role["name"] = session.get(Role, grant.role_id).name
                    user.update(name=session.get(User, grant.user_id).name, domain=domain)
                    project.update(name=session.get(Project, grant.project_id).name,
                                   domain=domain)
                found.append({"role": role, "user": user, "scope": {"project": project}})
            return found

    # Lookups ------------------------------------------------------------------------------

    @staticmethod
    def _user(session, user_id: str) -> User:
        user = session.get(User, user_id)
        if user is None:
            raise exception.NotFound(f"Could not find user: {user_id}.")
        return user

    @staticmethod
    def _project(session, project_id: str) -> Project:
        project = session.get(Project, project_id)
        if project is None:
            raise exception.NotFound(f"Could not find project: {project_id}.")
        return project


def _extra(values: dict, current: dict) -> dict:
    extra = dict(current)
    for key in ("description", "email"):
        if key in values:
            extra[key] = values[key]
    return extra


def _revoke(session, condition) -> None:
    session.execute(update(Token).where(condition, Token.valid.is_(True)).values(valid=False))
