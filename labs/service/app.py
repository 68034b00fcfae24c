"""The lab service's API (``/v1``), behind keystonemiddleware like every service.

    GET  /v1/labs                                    the course
    GET  /v1/attempts[?all=true][&lab=NAME]          your attempts (all: everyone's, admins)
    POST /v1/labs/NAME/attempts                      start (or go on with) an attempt
    GET  /v1/labs/NAME/attempts/current              your attempt in progress
    PUT  /v1/labs/NAME/attempts/current/answers/KEY  answer a question
    POST /v1/labs/NAME/attempts/current/grade        grade it, with your lab folder's files
    POST /v1/labs/NAME/attempts/current/finish       remove what you made; end the attempt

A lab that operates the cloud (``[cloud] operates`` in its lab.toml: it reads the
cloud's files or changes its configuration) starts only for an admin, or with an
admin's token in ``X-Operator-Token`` beside the learner's (on its start and its
grades): the cloud's owner can log in as its admin (``credentials.json``), a
classmate on a shared cloud cannot.

Errors are keystone-shaped (``{"error": {"code", "message", "title"}}``); every
body is validated; a learner reaches only their own attempts.
"""

from __future__ import annotations

import threading

from flask import Flask, g, jsonify, request

from novalab.labs.course import LabNotFound, find, labs
from novalab.labs.service import OPERATOR_HEADER, learners
from novalab.labs.service.records import Learner, Records
from novalab.labs.service.runner import Runner
from novalab.reference.common import exception
from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.validation import schema
from novalab.reference.common.wsgi import install_common_handlers, json_body, keystone_fault
from novalab.tracing.http import instrument_flask

# A grade carries the files its checks read (the lab's artifacts): a traced boot's
# trace files are about 1 MiB, a learner's own clouds for lab 14 two of them.
MAX_GRADE_BYTES = 16 * 1024 * 1024
MAX_FILES = 64
ANSWER_CHARS = 255

START = {"type": "object", "additionalProperties": False, "properties": {
    "attempt": {"type": "object", "additionalProperties": False, "properties": {
        "workdir": {"type": "string", "minLength": 1, "maxLength": 4096}}}},
    "required": ["attempt"]}
ANSWER = {"type": "object", "additionalProperties": False, "required": ["answer"],
          "properties": {"answer": {"type": "string", "minLength": 1,
                                    "maxLength": ANSWER_CHARS}}}
GRADE = {"type": "object", "additionalProperties": False, "required": ["files"],
         "properties": {"files": {
             "type": "object", "maxProperties": MAX_FILES,
             "propertyNames": {"type": "string", "minLength": 1, "maxLength": 255},
             "additionalProperties": {"type": "string"}}}}
FINISH = {"type": "object", "additionalProperties": False, "properties": {}}


def _course_entry(lab) -> dict:
    return {"name": lab.name, "number": lab.number, "title": lab.title,
            "steps": list(lab.steps), "modern_steps": list(lab.modern_steps),
            "questions": dict(lab.questions), "artifacts": list(lab.artifacts),
            "computes": lab.computes, "needs": list(lab.needs), "operates": lab.operates}


def create_app(records: Records, runner: Runner, auth: AuthProtocol,
               tracer_provider=None) -> Flask:
    app = Flask("novalab-labs")
    if tracer_provider is not None:
        instrument_flask(app, tracer_provider)
    install_common_handlers(app, fault=keystone_fault, max_body_bytes=MAX_GRADE_BYTES)
    auth.install(app)
    # One set-up, grade or finish of a lab at a time per learner: two terminals of one
    # learner must not clean up under each other's grade.
    locks: dict[str, threading.Lock] = {}
    guard = threading.Lock()

    def learner() -> Learner:
        context = g.context
        if not context.project_id:
            raise exception.Forbidden("the lab service needs a project-scoped token")
        return Learner(context.user_id, context.user_name, context.project_id,
                       context.project_name, "admin" in context.roles)

    def lab_named(name: str):
        try:
            return find(name)
        except LabNotFound as exc:
            raise exception.NotFound(str(exc)) from exc

    def current(lab, who: Learner) -> dict:
        attempt = records.current(who, lab.name)
        if attempt is None:
            raise exception.NotFound(f"you have no attempt at {lab.name} in progress: "
                                     f"`novalab lab start {lab.number}`")
        return attempt

    def require_operator(lab, who: Learner) -> None:
        """Lab 04 points the scheduler's filter_dirs at the learner's folder and its
        checks import the learner's filter (code run as the cloud's OS user); 06 and 08
        read the state dir, 10 stops services, 13 acts as admin. Only whoever runs the
        cloud may start or grade such a lab, whatever the learner's client says."""
        if not lab.operates or who.is_admin:
            return
        token = request.headers.get(OPERATOR_HEADER, "")
        try:
            roles = auth.context_for(token).roles if token else []
        except exception.NotAuthorized:
            roles = []
        if "admin" not in roles:
            raise exception.Forbidden(
                f"{lab.name} operates the cloud ({lab.operates}): do it on a cloud you "
                f"run yourself, the lab cloud of `novalab lab start {lab.number}` or your "
                "own `novalab up`, not on a class's shared cloud")

    def one_at_a_time(who: Learner) -> threading.Lock:
        with guard:
            return locks.setdefault(who.user_id, threading.Lock())

    @app.get("/")
    def versions():
        link = {"rel": "self", "href": f"{request.host_url}v1"}
        return jsonify({"versions": [{"id": "v1", "status": "CURRENT", "links": [link]}]})

    @app.get("/v1/labs")
    def course():
        return jsonify({"labs": [_course_entry(lab) for lab in labs()]})

    @app.get("/v1/attempts")
    def list_attempts():
        who = learner()
        everyone = request.args.get("all", "").lower() in ("1", "true", "yes")
        if everyone and not who.is_admin:
            raise exception.Forbidden("only an admin (the teacher) lists every learner's "
                                      "attempts")
        lab = request.args.get("lab")
        return jsonify({"attempts": records.attempts(None if everyone else who.user_id, lab),
                        "in_progress": records.in_progress()})

    @app.post("/v1/labs/<name>/attempts")
    @schema(START, error=exception.ValidationError)
    def start(name):
        lab, who = lab_named(name), learner()
        body = json_body()["attempt"]
        require_operator(lab, who)
        with one_at_a_time(who):
            attempt, new = records.start(who, lab.name, {**lab.draw(),
                                                         "workdir": body.get("workdir", "")})
            runner.start(lab, who, g.context.auth_token, attempt)
        response = jsonify({"attempt": attempt})
        response.status_code = 201 if new else 200
        return response

    @app.get("/v1/labs/<name>/attempts/current")
    def show_current(name):
        lab, who = lab_named(name), learner()
        return jsonify({"attempt": current(lab, who)})

    @app.put("/v1/labs/<name>/attempts/current/answers/<key>")
    @schema(ANSWER, error=exception.ValidationError)
    def answer(name, key):
        lab, who = lab_named(name), learner()
        if key not in lab.questions:
            raise exception.ValidationError(
                detail=f"{lab.name} asks no question {key!r}; its questions: "
                + (", ".join(lab.questions) or "none"))
        current(lab, who)
        attempt = records.answer(who, lab.name, key, json_body()["answer"].strip())
        return jsonify({"attempt": attempt})

    @app.post("/v1/labs/<name>/attempts/current/grade")
    @schema(GRADE, error=exception.ValidationError)
    def grade(name):
        lab, who = lab_named(name), learner()
        files = json_body()["files"]
        require_operator(lab, who)  # lab 04's checks import the learner's filter file
        with one_at_a_time(who):
            attempt = current(lab, who)
            results = runner.grade(lab, who, g.context.auth_token, attempt, files)
            passed = bool(results) and all(r.passed for r in results)
            records.graded(attempt["id"], passed, [r.to_dict() for r in results])
        return jsonify({"grade": {"passed": passed, "checks": [r.to_dict() for r in results]}})

    @app.post("/v1/labs/<name>/attempts/current/finish")
    @schema(FINISH, error=exception.ValidationError)
    def finish(name):
        lab, who = lab_named(name), learner()
        with one_at_a_time(who):
            attempt = current(lab, who)
            removed = runner.finish(lab, who, g.context.auth_token, attempt)
            records.finish(who, lab.name)
        return jsonify({"removed": removed, "in_progress": records.in_progress()})

    learners.register(app, records, runner.cloud)  # the teacher's: the class's learners
    return app
