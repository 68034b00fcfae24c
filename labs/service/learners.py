"""The class's learners, the teacher's part of the lab service's API (admins only).

    POST   /v1/learners         {"learner": {"name": N, "quotas": {...}}}  201, the
                                password once
    GET    /v1/learners         every learner: user, project, network, range
    GET    /v1/class            where each stands: labs, attempts, last grade (:mod:`.standing`)
    DELETE /v1/learners/NAME    everything the learner's project and user own, then them

The service does what the teacher's operator script would, with the cloud's
admin credentials (:mod:`.operator`); a teacher reaches it from any machine with
an admin's token (``novalab class``). The generated password is answered once
and kept nowhere but keystone's hash: the roster is the teacher's.
"""

from __future__ import annotations

from flask import Flask, g, jsonify
from sqlalchemy import update

from novalab.labs.cloud import Cloud
from novalab.labs.service import standing
from novalab.labs.service.models import Attempt
from novalab.labs.service.operator import MAX_QUOTAS, NAME, ClassOperator
from novalab.labs.service.records import Records
from novalab.reference.common import exception
from novalab.reference.common.credentials import generate
from novalab.reference.common.db import utcnow
from novalab.reference.common.validation import schema
from novalab.reference.common.wsgi import json_body

# A network, subnet and port the learner's own network needs at least.
_AT_LEAST_ONE = ("network", "subnet", "port")
CREATE = {"type": "object", "additionalProperties": False, "required": ["learner"],
          "properties": {"learner": {
              "type": "object", "additionalProperties": False, "required": ["name"],
              "properties": {
                  "name": {"type": "string", "pattern": NAME.pattern, "maxLength": 32},
                  "quotas": {"type": "object", "additionalProperties": False, "properties": {
                      key: {"type": "integer", "minimum": 1 if key in _AT_LEAST_ONE else 0,
                            "maximum": most} for key, most in MAX_QUOTAS.items()}}}}}}


def _teacher() -> None:
    context = g.context
    if not context.project_id or "admin" not in context.roles:
        raise exception.Forbidden("only an admin (the teacher) manages the class's learners "
                                  "and sees where they stand")


def _end_attempts(records: Records, user_id: str) -> int:
    """End a removed learner's attempts in progress: the cloud is no longer theirs (and
    `lab finish` stops the lab cloud only when no attempt is in progress)."""
    with records.db.session() as session:
        return session.execute(update(Attempt).where(
            Attempt.user_id == user_id, Attempt.finished_at.is_(None))
            .values(finished_at=utcnow())).rowcount


def register(app: Flask, records: Records, cloud: Cloud) -> ClassOperator:
    """Add the routes; the operator acts as ``cloud``'s admin (its credentials.json)."""
    operator = ClassOperator(cloud.auth_url, lambda: cloud.credentials.admin)

    @app.post("/v1/learners")
    @schema(CREATE, error=exception.ValidationError)
    def add_learner():
        _teacher()
        body = json_body()["learner"]
        password = generate()
        learner = operator.add(body["name"], password, body.get("quotas", {}))
        return jsonify({"learner": {**learner, "password": password}}), 201

    @app.get("/v1/learners")
    def list_learners():
        _teacher()
        return jsonify({"learners": operator.learners()})

    @app.get("/v1/class")
    def class_standing():
        _teacher()
        names = [learner["name"] for learner in operator.learners()]
        return jsonify({"standing": standing.rows(names, records.attempts())})

    @app.delete("/v1/learners/<name>")
    def remove_learner(name):
        _teacher()
        if not NAME.match(name):
            raise exception.ValidationError(detail=f"{name[:40]!r} is not a learner's name")
        learners = {learner["name"]: learner for learner in operator.learners()}
        removed = operator.remove(name)
        user_id = (learners.get(name) or {}).get("user_id")
        removed["attempts_ended"] = _end_attempts(records, user_id) if user_id else 0
        return jsonify({"removed": removed})

    return operator
