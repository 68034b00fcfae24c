"""Lab 13: the learner's project, grant and quota, read from the APIs as admin; the
refused request read from its own trace; the lockout from keystone's answer.

Nothing is taken from the learner's word where the cloud can say it: the refused
request must be one cinder-api answered 413 with no row written and nothing cast
to cinder-volume below it, and the locked-out status is checked against what
cinder-api answers a disabled user's token now.
"""

import httpx

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


@check("the request cinder refused over quota, read from its trace (answer refused-request)")
def refused(ctx):
    given = ctx.answer("refused-request")
    trace, answered = ctx.request_trace(
        given, "the x-openstack-request-id header of cinder's answer to the second create")
    served = [s for s in answered if s.service == "cinder-api"]
    if not served:
        raise Fail(f"{given} is not a request cinder-api answered")
    span = served[0]
    status = span.get(attr.HTTP_RESPONSE_STATUS_CODE)
    if status != 413:
        raise Fail(f"cinder-api answered {status} to {given}, not 413: take the create that "
                   "passed the quota")
    below = trace.descendants(span)
    written = [s.name for s in below if str(s.name).startswith("INSERT")]
    sent = [s.name for s in below if s.kind == "PRODUCER"]
    if written or sent:
        raise Fail(f"below {given} the trace shows {written + sent}: that request did work")


@check("the status of the refused request (answer refused-status)")
def refused_status(ctx):
    if ctx.answer("refused-status") != "413":
        raise Fail("read http.response.status_code on cinder-api's SERVER span of the "
                   "refused request, or the (HTTP ...) in the CLI's error")


@check("{learner} is disabled and their old token refused (answer locked-out)")
def locked_out(ctx):
    if _learner(ctx).get("enabled", True):
        raise Fail(f"{ctx.names['learner']} is still enabled: `user set --disable` as admin")
    given = ctx.answer("locked-out")
    # What cinder-api answers any token that is not (or no longer) valid, right now.
    url = ctx.admin_api.client.endpoint("volumev3") + "/volumes"
    now = httpx.get(url, headers={"X-Auth-Token": "no-such-token"}, timeout=30).status_code
    if given != str(now):
        raise Fail(f"{given!r} is not what cinder-api answers a refused token: send the "
                   "learner's old token again after ten seconds (step 5)")
