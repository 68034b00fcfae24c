"""Lab 13: the learner's project, grant and quota, read from the APIs as admin; the
refused request read from its own trace; the lockout from keystone's answer.

Nothing is taken from the learner's word where the cloud can say it: the refused
request must be one cinder-api answered 413 for the lab's project (its id is in
the path) with no row written and nothing cast to cinder-volume below it, the
count is a span under it, and the lockout is the learner's own 401 on that
project, after the refused create. Every class gets the same 413 and 401:
the answers are request and span ids.
"""

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr


def _one(items: list[dict], name: str, what: str) -> dict:
    found = [i for i in items if i.get("name") == name]
    if not found:
        raise Fail(f"no {what} named {name}: step 1 of the guide makes it")
    return found[0]


def _project(ctx) -> dict:
    return _one(ctx.admin_api.get("identity", "/projects", name=ctx.names["project"])[
        "projects"], ctx.names["project"], "project")


def _learner(ctx) -> dict:
    return _one(ctx.admin_api.get("identity", "/users", name=ctx.names["learner"])[
        "users"], ctx.names["learner"], "user")


@check("{learner} is a member of project {project}")
def member(ctx):
    project, learner = _project(ctx), _learner(ctx)
    grants = ctx.admin_api.get("identity", "/role_assignments", include_names="1",
                               **{"user.id": learner["id"], "scope.project.id": project["id"]})
    roles = {g["role"]["name"] for g in grants["role_assignments"]}
    if "member" not in roles:
        raise Fail(f"{ctx.names['learner']} holds {sorted(roles) or 'no role'} on "
                   f"{ctx.names['project']}: `role add --project ... --user ... member`")


@check("project {project} may have one volume, and has {volume}")
def quota(ctx):
    project = _project(ctx)
    quota_set = ctx.admin_api.get("volumev3", f"/os-quota-sets/{project['id']}")["quota_set"]
    if quota_set.get("volumes") != 1:
        raise Fail(f"{ctx.names['project']}'s volume quota is {quota_set.get('volumes')}, "
                   "not 1: `quota set --volumes 1 PROJECT` as admin (step 3)")
    volumes = ctx.admin_api.get("volumev3", "/volumes/detail", all_tenants="1",
                                project_id=project["id"])["volumes"]
    if not any(v["name"] == ctx.names["volume"] for v in volumes):
        raise Fail(f"{ctx.names['project']} has no volume {ctx.names['volume']}: create it "
                   "as the learner (step 4)")


def _cinder_answer(ctx, key: str, copy_from: str, status: int, what: str):
    """The trace of the request the answer ``key`` names and cinder-api's SERVER span
    that answered it: with ``status``, for the lab's project (its id is in the path of
    every volume request, ``/v3/{project_id}/...``), in this attempt."""
    given = ctx.answer(key)
    trace, answered = ctx.request_trace(given, copy_from)
    served = [s for s in answered if s.service == "cinder-api"]
    if not served:
        raise Fail(f"{given} is not a request cinder-api answered")
    span = served[0]
    path = str(span.get(attr.URL_PATH) or "")
    if f"/{_project(ctx)['id']}/" not in f"{path}/":
        raise Fail(f"{given} ({path}) is not a request of project {ctx.names['project']}: "
                   f"send it with {what}")
    answered_with = span.get(attr.HTTP_RESPONSE_STATUS_CODE)
    if answered_with != status:
        raise Fail(f"cinder-api answered {answered_with} to {given}, not {status}: {what}")
    return trace, span


def _refused(ctx):
    return _cinder_answer(
        ctx, "refused-request", "the x-openstack-request-id header of cinder's answer to the "
        "second create", 413, "the learner's token, the create that passed the quota")


@check("the request cinder refused over quota, read from its trace (answer refused-request)")
def refused(ctx):
    trace, span = _refused(ctx)
    below = trace.descendants(span)
    written = [s.name for s in below if str(s.name).startswith("INSERT")]
    sent = [s.name for s in below if s.kind == "PRODUCER"]
    if written or sent:
        raise Fail(f"below {span.get(attr.OPENSTACK_REQUEST_ID)} the trace shows "
                   f"{written + sent}: that request did work")


@check("the count of the project's volumes in the refused request (answer quota-count)")
def quota_count(ctx):
    trace, span = _refused(ctx)
    counts = {s.span_id for s in trace.descendants(span) if str(s.name).startswith("SELECT")
              and "volumes" in str(s.name)}
    given = ctx.answer("quota-count").lower()
    if given not in counts:
        raise Fail(f"{given!r} is not the span id of a SELECT of cinder's volumes under "
                   "cinder-api's answer to your refused request: the count the quota was "
                   "checked against (`novalab trace collect --request-id REQ -o FILE`)")


@check("{learner} is disabled and their old token refused (answer locked-out)")
def locked_out(ctx):
    if _learner(ctx).get("enabled", True):
        raise Fail(f"{ctx.names['learner']} is still enabled: `user set --disable` as admin")
    _, span = _cinder_answer(
        ctx, "locked-out", "the x-openstack-request-id header of cinder's 401", 401,
        "the learner's old token, ten seconds after they were disabled (step 5)")
    _, refused_span = _refused(ctx)
    if span.start_ns < refused_span.start_ns:
        raise Fail("that 401 came before the refused create: send the learner's old token "
                   "again once they are disabled (step 5)")
