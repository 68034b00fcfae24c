"""Lab 16: the learner's key pair, the server booted with it, and the key's way to the guest.

The key pair is read from Nova (as the learner), the private key from the
learner's lab folder, and what the guest is served is asked of the metadata
proxy as the guest would ask it (from the loopback address that stands for
its port). The answers are checked against the learner's boot: the span of
cloud-init's ``ssh_util.setup_user_keys`` that installed the key (its
fingerprint), nova-api-metadata's SERVER span whose
``InstanceMetadata._metadata_as_json`` put the key in the answer, and the
proxy's CLIENT span that sent the request there (the hop its ``url.full`` names).
"""

import base64
import hashlib

from cryptography.hazmat.primitives import serialization

from novalab.labs.grading import Fail, check
from novalab.tracing import attributes as attr

PRIVATE_KEY = "key.pem"
METADATA = "nova-api-metadata"
PROXY = "neutron-metadata-proxy"
SERVED = "InstanceMetadata._metadata_as_json"
INSTALLED = "ssh_util.setup_user_keys"


def _keypair(ctx) -> dict:
    response = ctx.api.request("GET", "compute", f"/os-keypairs/{ctx.names['key']}")
    if response.status_code == 404:
        raise Fail(f"you have no key pair named {ctx.names['key']}: create it (step 1 of "
                   "the guide)")
    response.raise_for_status()
    return response.json()["keypair"]


def _md5(public_key: str) -> str:
    digest = hashlib.md5(base64.b64decode(public_key.split()[1]),
                         usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def _server(ctx) -> dict:
    return ctx.require_active(ctx.names["server"], "boot it (step 2 of the guide)")


def _installed(ctx) -> list:
    """cloud-init's spans that installed the learner's key, in the boot of the server."""
    trace = ctx.boot(ctx.names["server"])
    found = [s for s in trace if s.service == "cloud-init" and s.name == INSTALLED
             and s.get(attr.NOVA_KEYPAIR_NAME) == ctx.names["key"]]
    if not found:
        raise Fail(f"in your boot of {ctx.names['server']} the guest installed no key named "
                   f"{ctx.names['key']}: boot it with --key-name {ctx.names['key']} (step 2)")
    return found


def _carrying(ctx) -> list:
    """nova-api-metadata's SERVER spans whose answer carried the learner's key."""
    trace = ctx.boot(ctx.names["server"])
    return [s for s in trace if s.service == METADATA and s.kind == "SERVER"
            and any(d.name == SERVED and d.get(attr.NOVA_KEYPAIR_NAME) == ctx.names["key"]
                    for d in trace.descendants(s))]


@check("{key} is your key pair, and key.pem in your lab folder is its private half")
def key_pair(ctx):
    keypair = _keypair(ctx)
    path = ctx.workdir / PRIVATE_KEY
    if not path.exists():
        raise Fail(f"no {path}: create the key pair with --private-key {PRIVATE_KEY} in that "
                   "folder (step 1)")
    data = path.read_bytes()
    try:
        private = serialization.load_ssh_private_key(data, None)
    except ValueError:
        try:
            private = serialization.load_pem_private_key(data, None)
        except (ValueError, TypeError) as exc:
            raise Fail(f"{PRIVATE_KEY} is not an unencrypted private key ({exc})") from exc
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                               serialization.PublicFormat.OpenSSH).decode()
    if public.split()[:2] != keypair["public_key"].split()[:2]:
        raise Fail(f"{PRIVATE_KEY} is not the private half of {ctx.names['key']} (was the key "
                   "pair created again since?)")
    if keypair["fingerprint"] != _md5(keypair["public_key"]):
        raise Fail(f"Nova shows {keypair['fingerprint']} for {ctx.names['key']}, not the MD5 "
                   "of its key")


@check("{server} is ACTIVE and was booted with {key}")
def booted_with_key(ctx):
    server = _server(ctx)
    if server.get("key_name") != ctx.names["key"]:
        raise Fail(f"{server['name']} was booted with key {server.get('key_name')!r}: delete "
                   f"it and boot it again with --key-name {ctx.names['key']} (step 2)")


@check("the guest of {server} is served your public key (meta_data.json and EC2's tree)")
def key_served(ctx):
    server, keypair = _server(ctx), _keypair(ctx)
    ports = ctx.api.get("network", "/v2.0/ports", device_id=server["id"])["ports"]
    if not ports:
        raise Fail(f"{server['name']} has no port: boot it with --network private")
    meta = ctx.as_guest(ports[0], "/openstack/latest/meta_data.json")
    meta.raise_for_status()
    served = meta.json().get("public_keys")
    if served != {ctx.names["key"]: keypair["public_key"]}:
        raise Fail(f"meta_data.json serves the keys {sorted(served or {})}, not your "
                   f"{ctx.names['key']} as it is now (was it created again after the boot?)")
    ec2 = ctx.as_guest(ports[0], "/latest/meta-data/public-keys/0/openssh-key")
    if ec2.status_code != 200 or ec2.text != keypair["public_key"]:
        raise Fail(f"EC2's public-keys/0/openssh-key answers {ec2.status_code}, not your key")


@check("your boot of {server}: steps 52-54, and the guest installed {key}")
def guest_installed(ctx):
    _server(ctx)
    result = ctx.flow(ctx.names["server"])
    missing = [n for n in (52, 53, 54) if not result.result(n).matched]
    if missing:
        raise Fail(f"missing from your boot: steps {missing} ({result.summary})")
    _installed(ctx)


@check("the fingerprint the guest computed (answer fingerprint)")
def fingerprint(ctx):
    computed = {str(s.get(attr.NOVA_KEYPAIR_FINGERPRINT)) for s in _installed(ctx)}
    given = ctx.answer("fingerprint").lower().removeprefix("md5:")
    if given not in computed:
        raise Fail(f"{given!r} is not the fingerprint on the guest's {INSTALLED} span in your "
                   f"boot (its {attr.NOVA_KEYPAIR_FINGERPRINT})")
    if given != _keypair(ctx)["fingerprint"]:
        raise Fail(f"the guest computed {given}, but Nova's {ctx.names['key']} now has "
                   "another fingerprint: the pair was created again after the boot")


@check("the metadata request that carried your key (answer metadata-span)")
def metadata_span(ctx):
    trace = ctx.boot(ctx.names["server"])
    given = ctx.answer("metadata-span").lower()
    span = trace.span(given)
    if span is None:
        raise Fail(f"no span {given!r} in your boot of {ctx.names['server']}: the span ids are "
                   "in `novalab flow check --server NAME --format json` (steps[].span.span_id)")
    if span not in _carrying(ctx):
        raise Fail(f"span {given} is {span.service} {span.kind} {span.name}, not a "
                   f"{METADATA} SERVER span whose {SERVED} served {ctx.names['key']}")


@check("the proxy's hop to nova-api-metadata (answer proxy-hop)")
def proxy_hop(ctx):
    trace = ctx.boot(ctx.names["server"])
    hops = {parent.span_id: parent for span in _carrying(ctx)
            if (parent := trace.parent(span)) is not None and parent.service == PROXY
            and parent.kind == "CLIENT"}
    given = ctx.answer("proxy-hop").lower()
    if given not in hops:
        raise Fail(f"{given!r} is not the span of {PROXY}'s request that carried your key to "
                   f"{METADATA}: the CLIENT span just above {METADATA}'s SERVER span, whose "
                   f"url.full says where it went ({len(hops)} such request(s) in your boot)")
