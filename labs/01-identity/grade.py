"""Lab 01: the learner's token, the token store and cinder-api validating a token.

Every answer is compared with what only the learner's own boot, requests and
token show: the spans of steps 1-3 and 40 of their boot (span ids, a duration, a
request id), the trace of the request id they name, and what keystone says of the
token in their token.json (issued to them, during this attempt).
"""

import hashlib
import json
import re
from datetime import UTC, datetime

from novalab.diagrams.flows.rules import http_server
from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

_VALIDATE = http_server("GET", r"/auth/tokens$")


@check("{server} is ACTIVE, booted with a volume")
def server_with_volume(ctx):
    server = ctx.require_active(ctx.names["server"], "boot it with a volume (step 4 of the guide)")
    if not server.get("os-extended-volumes:volumes_attached"):
        raise Fail(f"{server['name']} has no volume, so cinder never saw your token: delete it "
                   "and boot it again with --block-device source_type=blank,"
                   "destination_type=volume,volume_size=1,delete_on_termination=true")


@check("your boot of {server}: every step it implies, 40 and 41 included")
def boot_is_whole(ctx):
    result = ctx.require_whole_boot(ctx.names["server"])
    step = result.result(40)
    if not step.matched:
        raise Fail("step 40 is not in your boot's trace: "
                   + (step.excused or "cinder-api did not ask keystone about the token"))


def _step(ctx, number: int):
    result = ctx.flow(ctx.names["server"])
    step = result.result(number)
    if not step.matched:
        raise Fail(f"step {number} is not in the trace of your boot of {ctx.names['server']}: "
                   "`novalab flow check --server NAME` says why")
    return result.trace, step.span


def _token_file(ctx) -> dict:
    path = ctx.workdir / "token.json"
    if not path.exists():
        raise Fail(f"no {path}: `openstack token issue -f json > token.json` in that folder "
                   "(step 1 of the guide)")
    try:
        token = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Fail(f"{path.name} is not JSON ({exc}): write it with -f json") from exc
    if not isinstance(token, dict) or not token.get("id") or not token.get("expires"):
        raise Fail(f"{path.name} has no id and expires: is it `openstack token issue -f json`?")
    return token


def _time(value: str, fmt: str) -> datetime:
    parsed = datetime.strptime(value, fmt)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@check("token.json: a token keystone issued to you, as keystone dates it")
def token_file(ctx):
    token = _token_file(ctx)
    response = ctx.admin_api.request("GET", "identity", "/auth/tokens", params={"nocatalog": 1},
                                     headers={"X-Subject-Token": str(token["id"])})
    if response.status_code == 404:
        raise Fail("keystone does not know the token in token.json (a token lives one hour): "
                   "issue a new one")
    if response.status_code != 200:
        raise Fail(f"keystone answered {response.status_code} about the token in token.json")
    issued = response.json()["token"]
    if ctx.started_at and _time(issued["issued_at"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() \
            < ctx.started_at:
        raise Fail("the token in token.json was issued before this attempt at the lab "
                   "started: issue a new one (step 1)")
    if issued["user"]["name"] != ctx.user or token.get("user_id") != issued["user"]["id"]:
        raise Fail(f"the token in token.json belongs to {issued['user']['name']}, not to you "
                   f"({ctx.user}): eval \"$(novalab lab env)\" first")
    try:
        written = _time(str(token["expires"]), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError as exc:
        raise Fail(f"expires in token.json ({token['expires']!r}) is not the CLI's format: "
                   "write the file with `openstack token issue -f json`") from exc
    expires = _time(issued["expires_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
    if abs((written - expires).total_seconds()) >= 1:
        raise Fail(f"token.json says the token expires at {token['expires']}, keystone says "
                   f"{issued['expires_at']}: was the file edited?")


@check("the SHA-256 keystone keeps of your token (answer token-hash)")
def token_hash(ctx):
    token = _token_file(ctx)
    given = ctx.answer("token-hash").lower()
    if not re.fullmatch(r"[0-9a-f]{12,64}", given):
        raise Fail(f"{given!r} is not a SHA-256 in hex (at least its first 12 digits)")
    if not hashlib.sha256(str(token["id"]).encode()).hexdigest().startswith(given):
        raise Fail("that is not the SHA-256 of the token in token.json: hash its id alone, "
                   "with no newline after it")


@check("the INSERT that saved your boot's token, step 2 (answer token-insert)")
def token_insert(ctx):
    _, span = _step(ctx, 2)
    given = ctx.answer("token-insert").lower()
    if given != span.span_id:
        what = ("the table every token goes to" if "token" in given else
                "not the span of step 2 in your boot")
        raise Fail(f"{given!r} is {what}: answer the span id of step 2's `INSERT "
                   "keystone_tokens` (the last word of its line in the flow check)")


@check("how long your boot's token request took (answer token-ms)")
def token_ms(ctx):
    _, span = _step(ctx, 1)
    took = span.duration_ns / 1e6
    value = ctx.answer_ms("token-ms")
    if abs(value - took) > max(1.0, 0.1 * took):
        raise Fail(f"{value:g} ms is not how long step 1's span lasted in your trace: from step 1 "
                   "to step 3 of the flow check, or the duration `trace show` prints")


@check("the request whose token keystone validated at step 40 (answer validated-for)")
def validated_for(ctx):
    trace, span = _step(ctx, 40)
    caller = next((a for a in trace.ancestors(span) if a.service != span.service
                   and a.get(attr.OPENSTACK_REQUEST_ID)), None)
    given = ctx.answer("validated-for")
    if caller is None or given != caller.get(attr.OPENSTACK_REQUEST_ID):
        raise Fail(f"{given!r} is not the request on whose behalf keystone was asked at step "
                   "40: find the span above keystone's GET /v3/auth/tokens that answered a "
                   "request (a SERVER span of the service that asked) and its "
                   "openstack.request_id")


@check("a cinder request served from the token cache (answer cached-request)")
def cached_request(ctx):
    given = ctx.answer("cached-request")
    trace, answered = ctx.request_trace(
        given, "the x-openstack-request-id header of cinder's answer (curl -si)")
    served = [s for s in answered if s.service == "cinder-api"]
    if not served:
        raise Fail(f"{given} is not the id of a request cinder-api answered")
    span = served[0]
    if span.get(attr.HTTP_RESPONSE_STATUS_CODE) != 200:
        raise Fail(f"cinder-api answered {span.get(attr.HTTP_RESPONSE_STATUS_CODE)} to {given}: "
                   "send a valid token (X-Auth-Token) and take a request that succeeded")
    if any(_VALIDATE(s) and s.service == "keystone" for s in trace.descendants(span)):
        raise Fail(f"cinder-api asked keystone about the token in {given} (its trace has GET "
                   "/v3/auth/tokens below cinder's span): the first request with a token is "
                   "validated; send the same token again")
