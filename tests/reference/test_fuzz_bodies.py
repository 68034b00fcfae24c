"""Every request body of every service, fuzzed over real HTTP (issue 10, item 2).

Each route that takes a JSON body carries its schema (``view.body_schema``, see
``reference/common/validation.py``). For each one, hypothesis with
hypothesis-jsonschema draws bodies from that schema, and as many malformed ones:
a field of the wrong type, huge strings, deep nesting, ``10**30`` and ``-1``,
nulls, control characters, unknown keys, JSON that is not an object, bytes that
are not JSON, no body at all. They go to the route of a running embedded cloud
with an admin's or a project member's token, path parameters filled with a real
resource's id or a random UUID.

What every answer must be: not a 5xx, not a hang (the client gives up after
``TIMEOUT`` seconds), and on a 4xx an OpenStack fault body of the service's
own shape. Valid bodies may well be accepted (2xx): what they create is
deleted at once, so the cloud stays small.

Generation is derandomized (a fixed seed, no example database), so a failure
reproduces; a failing route reports the exact requests that failed.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from novalab.reference.common import validation
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry

# The services whose routes take JSON, by the name their server thread carries.
SERVICES = ("keystone", "glance-api", "cinder-api", "neutron-server", "nova-api",
            "nova-api-metadata", "neutron-metadata-proxy", "ceph-rgw", "placement-api")
# Bodies across all routes (each route gets its share); NOVALAB_FUZZ_BODIES for a quick run.
TOTAL_BODIES = int(os.environ.get("NOVALAB_FUZZ_BODIES", 11_000))
MIN_EXAMPLES = 10           # schema-valid bodies per route, at least
VARIANTS = 9                # malformed bodies sent with each valid one
PERSONAS = ("admin", "member")
POOL = ThreadPoolExecutor(1 + VARIANTS, thread_name_prefix="fuzz")
MIN_TOTAL_BODIES = 10_000  # issue 10: at least this many across the services
TIMEOUT = 20.0             # seconds: an answer later than this is a hang

# What a 4xx body looks like, per service (keystonemiddleware's 401 is Keystone's
# shape on every service, as upstream).
KEYSTONE_STYLE = {"keystone", "glance-api"}
NEUTRON_STYLE = {"neutron-server"}
WEBOB_STYLE = {"nova-api-metadata", "neutron-metadata-proxy"}  # webob's "404 Not Found" page
SWIFT_STYLE = {"ceph-rgw"}  # Swift's "<html><h1>Not Found</h1><p>...</p></html>"
PLACEMENT_STYLE = {"placement-api"}  # {"errors": [{"status", "title", "detail", ...}]}

# Counts in a schema-valid body are capped: a valid create really happens.
CAPPED = {"min_count": 2, "max_count": 2, "size": 1, "volume_size": 1}

# The services' threads use `random` while hypothesis draws; that is not the strategies'.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")

SENT: Counter = Counter()   # bodies sent, per service (printed at the end)
TIMES: dict[str, float] = {}  # seconds per route (printed at the end)


# -- the cloud and its resources ---------------------------------------------------------

@dataclass
class Fuzzed:
    """The running cloud, tokens, and ids to put in paths and bodies."""

    cloud: EmbeddedCloud
    tokens: dict[str, str]
    projects: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=TIMEOUT))

    def url(self, service: str) -> str:
        return next(s.url for s in self.cloud.wiring._servers if s.name == service)

    def request(self, method, url, token, **kwargs):
        # Cinder's attachments need microversion 3.27 or later (Nova asks for 3.44).
        # Each service reads its own microversion header: cinder's 3.44 (attachments),
        # placement's newest, so every route it has is reachable.
        headers = {"X-Auth-Token": token,
                   "OpenStack-API-Version": "volume 3.44, placement 1.29",
                   **kwargs.pop("headers", {})}
        return self.http.request(method, url, headers=headers, **kwargs)


def _apps(cloud: EmbeddedCloud) -> dict:
    """The Flask app behind each service's server thread."""
    return {server.name: server._server.app for server in cloud.wiring._servers}


def _token(cloud: EmbeddedCloud, user: str, project: str) -> tuple[str, str]:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"},
            "password": cloud.config.credentials.password_for(user)}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    response = httpx.post(f"{cloud.identity_url}/auth/tokens", json=body, timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"], response.json()["token"]["project"]["id"]


def _seed_resources(f: Fuzzed) -> None:
    """One of each resource, the demo project's, for the path parameters."""
    token = f.tokens["member"]
    project = f.projects["member"]
    nova, neutron = f.url("nova-api"), f.url("neutron-server")
    glance, cinder = f.url("glance-api"), f.url("cinder-api")
    f.ids["image"] = f.cloud.cirros["id"]
    f.ids["flavor"] = "42"
    r = f.request("POST", f"{neutron}/v2.0/networks", token, json={"network": {"name": "fz"}})
    f.ids["network"] = r.json()["network"]["id"]
    r = f.request("POST", f"{neutron}/v2.0/subnets", token, json={"subnet": {
        "network_id": f.ids["network"], "cidr": "10.99.0.0/24", "ip_version": 4}})
    f.ids["subnet"] = r.json()["subnet"]["id"]
    r = f.request("POST", f"{neutron}/v2.0/ports", token,
                  json={"port": {"network_id": f.ids["network"]}})
    f.ids["port"] = r.json()["port"]["id"]
    r = f.request("POST", f"{glance}/v2/images", token,
                  json={"name": "fz", "disk_format": "raw", "container_format": "bare"})
    f.ids["own_image"] = r.json()["id"]
    r = f.request("POST", f"{cinder}/v3/{project}/volumes", token,
                  json={"volume": {"size": 1, "name": "fz"}})
    f.ids["volume"] = r.json()["volume"]["id"]
    r = f.request("POST", f"{nova}/v2.1/servers", token, json={"server": {
        "name": "fz", "flavorRef": "42", "imageRef": f.ids["image"],
        "networks": [{"uuid": f.ids["network"]}]}})
    f.ids["server"] = r.json()["server"]["id"]
    f.ids["request"] = r.headers.get("X-OpenStack-Request-ID", "req-x")
    f.cloud.wait_idle(60)
    r = f.request("POST", f"{cinder}/v3/{project}/attachments", token, json={"attachment": {
        "volume_uuid": f.ids["volume"], "instance_uuid": f.ids["server"]}})
    if r.status_code < 300:
        f.ids["attachment"] = r.json()["attachment"]["id"]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    telemetry = Telemetry(memory=False, otlp=False)
    # The modern topology, so placement's routes are fuzzed too.
    config = CloudConfig(state_dir=tmp_path_factory.mktemp("fuzz") / "cloud",
                         vif_plugging_timeout=2.0, topology="modern")
    with EmbeddedCloud(config, telemetry) as cloud:
        tokens, projects = {}, {}
        for persona, (user, project) in {"admin": ("admin", "admin"),
                                         "member": ("demo", "demo")}.items():
            tokens[persona], projects[persona] = _token(cloud, user, project)
        f = Fuzzed(cloud, tokens, projects)
        _seed_resources(f)
        yield f
        f.http.close()
    print(f"\nfuzz: {sum(SENT.values())} bodies sent: {dict(SENT)}")


# -- routes -------------------------------------------------------------------------------

def routes(cloud: EmbeddedCloud, service: str) -> list[tuple[str, str, dict | None]]:
    """``(method, rule, schema)`` of every route of ``service`` that takes a JSON body."""
    return validation.routes_with_schemas(_apps(cloud)[service])


def test_every_body_route_has_a_schema(fuzzed):
    """No route of any service takes a JSON body nobody checks."""
    unchecked = [f"{service}: {method} {rule}" for service in SERVICES
                 for method, rule, schema in routes(fuzzed.cloud, service) if schema is None]
    assert not unchecked, "routes taking a body without a schema:\n" + "\n".join(unchecked)


# -- bodies -------------------------------------------------------------------------------

FORMATS = {
    "uuid": st.uuids().map(str),
    "cidr": st.sampled_from(["10.0.0.0/24", "192.168.7.0/28", "fd00::/64", "0.0.0.0/0",
                             "10.0.0.0/8", "172.16.0.0/30"]),
    "ip-address": st.ip_addresses().map(str),
    "mac-address": st.sampled_from(["fa:16:3e:00:00:01", "FA-16-3E-AA-BB-CC"]),
}

# Values of the wrong type or out of any sane range, for any field.
BAD_VALUES = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 10**30, -(10**30), 1.5, "", " ", "abc",
                     [], {}, [None], {"": None}, "0", "-1", "1e400", "zz:zz"]),
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.text(st.characters(max_codepoint=0x1f), min_size=1, max_size=8),   # control chars
    st.integers(min_value=4000, max_value=200_000).map(lambda n: "x" * n),  # huge strings
    st.integers(min_value=10, max_value=3000).map(lambda n: json.loads("[" * n + "]" * n)
                                                  if n < 900 else "[" * n),  # deep nesting
)

# Whole bodies that are not a JSON object, or not JSON at all.
NOT_AN_OBJECT = st.sampled_from([
    b"", b" ", b"null", b"[]", b"[{}]", b"\"server\"", b"42", b"true", b"{", b"}", b"{\"a\":",
    b"{'a': 1}", b"\xff\xfe\x00", b"{\"a\": NaN}", b"{\"a\": 1e999}", b"[" * 5000,
    b"{\"a\":" * 3000, b"\x00" * 10, "{\"\u202e\": \"\ud800\"}".encode("utf-8", "surrogatepass"),
])


def _strip_patterns(schema):
    """The schema without ``pattern`` (hypothesis cannot generate some regexes)."""
    if isinstance(schema, dict):
        return {k: _strip_patterns(v) for k, v in schema.items() if k != "pattern"}
    if isinstance(schema, list):
        return [_strip_patterns(v) for v in schema]
    return schema


def valid_bodies(schema: dict) -> st.SearchStrategy:
    try:
        strategy = from_schema(schema, custom_formats=FORMATS)
        strategy.validate()
    except Exception:
        strategy = from_schema(_strip_patterns(schema), custom_formats=FORMATS)
    return strategy


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


def _capped(value):
    """A valid body's counts and sizes made small (a valid create really runs)."""
    if isinstance(value, dict):
        return {k: (min(v, CAPPED[k]) if k in CAPPED and isinstance(v, int)
                    and not isinstance(v, bool) else
                    str(CAPPED[k]) if k in CAPPED and isinstance(v, str) and v.isdigit()
                    else _capped(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_capped(v) for v in value]
    return value


def malformed(body) -> st.SearchStrategy[bytes]:
    """``body`` (a valid one) broken one way, or a body that is no JSON object at all."""
    paths = list(_paths(body))
    objects = [p for p in paths if isinstance(_at(body, p), dict)]
    wrong_value = st.tuples(st.sampled_from(paths), BAD_VALUES).map(
        lambda drawn: _replaced(body, *drawn))
    broken = [wrong_value, wrong_value]
    if objects:  # a JSON-patch body ([] of operations) may have no object to add a key to
        broken.append(st.tuples(st.sampled_from(objects), UNKNOWN_KEYS, BAD_VALUES).map(
            lambda drawn: _replaced(body, drawn[0],
                                    {**_at(body, drawn[0]), drawn[1]: drawn[2]})))
    return st.one_of(*broken).map(_encode) | NOT_AN_OBJECT


UNKNOWN_KEYS = st.sampled_from(["x", "id", "project_id", "tenant_id", "is_admin", "\u0000",
                                "a" * 300])


def _encode(body) -> bytes:
    return json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")


def _at(value, path):
    for part in path:
        value = value[part]
    return value


# -- checking answers ---------------------------------------------------------------------

def fault_problem(service: str, response: httpx.Response) -> str | None:
    """Why ``response`` (a 4xx) is not an OpenStack fault body, or None."""
    status = response.status_code
    if service in WEBOB_STYLE:
        return None if re.search(rf"\b{status} [A-Z]", response.text) else "not a webob fault"
    if service in SWIFT_STYLE:
        return None if response.text.startswith("<html><h1>") else "not a Swift fault"
    try:
        body = response.json()
    except ValueError:
        return "not JSON"
    if service in PLACEMENT_STYLE and status != 401:
        errors = body.get("errors") if isinstance(body, dict) else None
        return None if isinstance(errors, list) and errors and all(
            isinstance(e, dict) and e.get("status") == status and isinstance(e.get("detail"), str)
            for e in errors) else "not placement's errors"
    if service == "nova-api" and status == 404 and isinstance(body, dict) and \
            isinstance(body.get("events"), list) and body["events"] and \
            all(isinstance(e, dict) and e.get("code") in (404, 422) for e in body["events"]):
        # os-server-external-events: none of the events had an instance to go to;
        # upstream answers 404 with each event's own code, not a fault.
        return None
    if not isinstance(body, dict) or len(body) != 1:
        return "not a one-key object"
    (name, inner), = body.items()
    if not isinstance(inner, dict) or not isinstance(inner.get("message"), str):
        return "no message"
    if service in NEUTRON_STYLE and status != 401:
        return None if name == "NeutronError" and {"type", "detail"} <= inner.keys() \
            else "not a NeutronError"
    if service in KEYSTONE_STYLE or (status == 401 and name == "error"):
        return None if name == "error" and inner.get("code") == status else "not an error"
    return None if inner.get("code") == status and re.fullmatch(r"[a-zA-Z]+", name) \
        else "not a nova-style fault"


def _path_value(f: Fuzzed, rule: str, name: str, persona: str, drawn) -> str:
    """A real id for the parameter (``drawn`` is None), or the UUID drawn."""
    if drawn is not None:
        return str(drawn)
    if name in ("project_id", "tenant_id"):
        return f.projects[persona]
    if name == "item_id":   # neutron: /v2.0/<collection>s/<item_id>
        kind = rule.split("/")[2].rstrip("s")
        return f.ids.get(kind, str(uuid.uuid4()))
    kind = name.removesuffix("_id").removesuffix("_uuid")
    if kind == "image":
        return f.ids["own_image"]
    return f.ids.get(kind, str(uuid.uuid4()))


def _url(f: Fuzzed, service: str, rule: str, persona: str, ids: list) -> str:
    drawn = iter(ids)

    def fill(match):
        return _path_value(f, rule, match.group(2), persona, next(drawn, None))
    return f.url(service) + re.sub(r"<(?:(\w+):)?(\w+)>", fill, rule)


def _content_type(service: str, method: str) -> str:
    if service == "glance-api" and method == "PATCH":
        return "application/openstack-images-v2.1-json-patch"
    return "application/json"


def _cleanup(f: Fuzzed, url: str, response: httpx.Response) -> None:
    """Delete what an accepted create made (its id in the answer)."""
    try:
        body = response.json()
    except ValueError:
        return
    if isinstance(body, dict) and "id" not in body and len(body) == 1:
        body = next(iter(body.values()))
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        f.request("DELETE", f"{url}/{body['id']}", f.tokens["admin"])


# -- the fuzz -----------------------------------------------------------------------------

def fuzz_route(f: Fuzzed, service: str, method: str, rule: str, schema: dict,
               examples: int) -> list[str]:
    """Send ``examples`` schema-valid bodies to one route, each with ``VARIANTS``
    malformed ones; the problems found, as the requests that caused them."""
    problems: list[str] = []

    def one(body: bytes, persona: str, url: str) -> None:
        SENT[service] += 1
        try:
            response = f.request(method, url, f.tokens[persona], content=body,
                                 headers={"Content-Type": _content_type(service, method)})
        except httpx.TimeoutException:
            problems.append(f"HANG {method} {url} as {persona}: {body[:300]!r}")
            return
        status = response.status_code
        if status >= 500:
            problems.append(f"{status} {method} {url} as {persona}: {body[:300]!r} -> "
                            f"{response.text[:300]}")
        elif status >= 400:
            why = fault_problem(service, response)
            if why:
                problems.append(f"{status} ({why}) {method} {url} as {persona}: "
                                f"{body[:200]!r} -> {response.text[:200]}")
        elif method == "POST" and status < 300:
            _cleanup(f, url, response)

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(valid=valid_bodies(schema), data=st.data(), persona=st.sampled_from(PERSONAS),
           ids=st.lists(st.one_of(st.none(), st.uuids()), min_size=4, max_size=4))
    def send(valid, data, persona, ids):
        url = _url(f, service, rule, persona, ids)
        bodies = [_encode(_capped(valid))]
        bodies += [data.draw(malformed(valid)) for _ in range(VARIANTS)]
        list(POOL.map(lambda body: one(body, persona, url), bodies))

    started = time.monotonic()
    send()
    TIMES[f"{service} {method} {rule}"] = round(time.monotonic() - started, 1)
    return problems


@pytest.mark.parametrize("service", SERVICES)
def test_fuzz_service(fuzzed, service):
    """Every body route of ``service``: no 5xx, no hang, a fault body on every 4xx."""
    problems = []
    all_routes = [r for name in SERVICES for r in routes(fuzzed.cloud, name)]
    examples = max(MIN_EXAMPLES, -(-TOTAL_BODIES // ((1 + VARIANTS) * len(all_routes))))
    for method, rule, schema in routes(fuzzed.cloud, service):
        # A route with no schema yet (the test above fails on it) is fuzzed anyway.
        problems += fuzz_route(fuzzed, service, method, rule, schema or {"type": "object"},
                               examples)
    distinct = list(dict.fromkeys(problems))
    assert not problems, f"{len(problems)} bodies failed ({len(distinct)} distinct):\n" + \
        "\n".join(distinct[:20])


def test_at_least_ten_thousand_bodies(fuzzed):
    """Runs last in the module: the fuzz above sent enough bodies."""
    total = sum(SENT.values())
    print(f"\nfuzz: {total} bodies sent across {len(SENT)} services: {dict(SENT)}")
    print("seconds per route:", json.dumps(TIMES, indent=1))
    assert total >= MIN_TOTAL_BODIES
