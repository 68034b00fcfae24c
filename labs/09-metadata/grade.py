"""Lab 09: the learner's user data and property as the guest reads them, and steps 52-54.

What nova-api-metadata serves is never taken from the learner's file: the checks
ask the metadata proxy as the guest would (from the loopback address that stands
for its port) and compare. The attempt draws a property value and a line of the
user data. The answers are the learner's own boot's: the span id of the guest's
request for its user data, the address in the proxy's port lookup, the span id of
the proxy's request that vouched for their instance. (The signature is no answer:
on a class's cloud the shared secret is not the learner's to read.)
"""

from urllib.parse import parse_qs, urlsplit

import httpx

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

USER_DATA = "user-data.yaml"
PROXY = "neutron-metadata-proxy"
PROXY_REQUEST = "MetadataProxyHandlerBaseSocketServer._proxy_request"


def _server(ctx) -> dict:
    server = ctx.require_active(ctx.names["server"], "boot it (step 2 of the guide)")
    return server


def _port(ctx, server: dict) -> dict:
    ports = ctx.api.get("network", "/v2.0/ports", device_id=server["id"])["ports"]
    if not ports:
        raise Fail(f"{server['name']} has no port: boot it with --network private")
    return ports[0]


def _as_guest(ctx, path: str) -> httpx.Response:
    """GET ``path`` from the metadata proxy as the guest of the learner's server would."""
    return ctx.as_guest(_port(ctx, _server(ctx)), path)


def _guest_requests(ctx) -> list:
    """The proxy's SERVER spans of the guest's requests in the learner's boot, in order."""
    trace = ctx.boot(ctx.names["server"])
    return [s for s in trace if s.service == PROXY and s.kind == "SERVER"
            and (parent := trace.parent(s)) is not None and parent.service == "cloud-init"]


@check("nova-api-metadata serves {server} your " + USER_DATA)
def user_data(ctx):
    path = ctx.workdir / USER_DATA
    if not path.exists():
        raise Fail(f"no {path}: write it (step 1 of the guide)")
    line = ctx.parameters.get("line")
    if line and str(line).encode() not in path.read_bytes():
        raise Fail(f"your {USER_DATA} does not say {line}: write it as step 1 of the guide "
                   "shows, then boot with it")
    response = _as_guest(ctx, "/openstack/latest/user_data")
    if response.status_code == 404:
        raise Fail(f"{ctx.names['server']} has no user data: boot it with "
                   f"--user-data {USER_DATA} (step 2)")
    response.raise_for_status()
    if response.content != path.read_bytes():
        raise Fail(f"the user data served to {ctx.names['server']} is not your {USER_DATA}: "
                   "did you change the file after the boot? Boot again with it")


@check("the meta_data.json of {server} carries your property")
def property_served(ctx):
    server = _server(ctx)
    if not server.get("metadata"):
        raise Fail(f"{server['name']} has no property: boot it with --property KEY=VALUE")
    drawn = ctx.parameters.get("course")
    if drawn and server["metadata"].get("course") != str(drawn):
        raise Fail(f"{server['name']}'s properties are {server['metadata']!r}; this attempt "
                   f"asks for course={drawn} (step 2 of the guide)")
    response = _as_guest(ctx, "/openstack/latest/meta_data.json")
    response.raise_for_status()
    served = response.json().get("meta")
    if served != server["metadata"]:
        raise Fail(f"meta_data.json serves {served!r}, not the server's properties "
                   f"{server['metadata']!r}")


@check("your boot of {server}: steps 52-54, the user data served")
def guest_read(ctx):
    _server(ctx)
    result = ctx.flow(ctx.names["server"])
    missing = [n for n in (52, 53, 54) if not result.result(n).matched]
    if missing:
        raise Fail(f"missing from your boot: steps {missing} ({result.summary})")
    served = [s for s in result.trace if s.service == "nova-api-metadata" and s.kind == "SERVER"
              and str(s.get(attr.URL_PATH, "")).endswith("/user_data")
              and s.get(attr.HTTP_RESPONSE_STATUS_CODE) == 200]
    if not served:
        raise Fail("in your boot nova-api-metadata served no user_data: the guest asks for "
                   "it only when the server has some (boot it with --user-data)")


@check("the guest's request for its user data (answer user-data-span)")
def user_data_span(ctx):
    asked = [s for s in _guest_requests(ctx)
             if str(s.get(attr.URL_PATH, "")).endswith("/user_data")]
    if not asked:
        raise Fail("in your boot the guest never asked the proxy for its user_data")
    trace = ctx.boot(ctx.names["server"])
    given = ctx.answered_span("user-data-span", trace, f"your boot of {ctx.names['server']}")
    if given.span_id not in {s.span_id for s in asked}:
        raise Fail(f"{given.service}'s {given.name} ({given.get(attr.URL_PATH) or 'no path'}) "
                   f"is not the {PROXY} SERVER span of the guest's request for user_data: "
                   "which paths did cloud-init ask for, in which order?")


@check("the address the proxy looked up (answer guest-ip)")
def guest_ip(ctx):
    trace = ctx.boot(ctx.names["server"])
    looked_up = set()
    for span in trace:
        url = str(span.get(attr.URL_FULL, ""))
        if span.service == PROXY and span.kind == "CLIENT" and "/v2.0/ports" in url:
            for value in parse_qs(urlsplit(url).query).get("fixed_ips", []):
                looked_up.add(value.removeprefix("ip_address="))
    given = ctx.answer("guest-ip")
    if given not in looked_up:
        raise Fail(f"{given!r} is not the address in the proxy's port lookup in your boot: "
                   f"read url.full of {PROXY}'s GET to neutron (fixed_ips=ip_address=...)")
    port = _port(ctx, _server(ctx))
    if given not in {f["ip_address"] for f in port["fixed_ips"]}:
        raise Fail(f"{given} is not the fixed IP of {ctx.names['server']}")


@check("the proxy's request that vouched for {server} (answer vouch-span)")
def vouch_span(ctx):
    server = _server(ctx)
    trace = ctx.boot(ctx.names["server"])
    vouched = [s for s in trace if s.name == PROXY_REQUEST
               and s.get(attr.NOVA_INSTANCE_UUID) == server["id"]]
    if not vouched:
        raise Fail(f"in your boot the proxy never vouched for {server['name']} "
                   f"({server['id']})")
    given = ctx.answered_span("vouch-span", trace, f"your boot of {server['name']}")
    if given.span_id not in {s.span_id for s in vouched}:
        raise Fail(f"{given.service}'s {given.name} is not a {PROXY_REQUEST} that vouched for "
                   f"{server['id']} (nova.instance.uuid)")
