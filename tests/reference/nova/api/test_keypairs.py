"""``os-keypairs`` over real HTTP on an embedded cloud, per microversion, and ``--key-name``.

Each answer is checked against the response schema of its microversion (upstream's
``response_body_schema`` of ``schemas/keypairs.py``, additional properties
forbidden), fingerprints against ``ssh-keygen -l -E md5`` where it is installed.
Tests of a microversion above novalab's maximum are skipped, naming the version.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
from datetime import UTC, datetime

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from sqlalchemy import select

from novalab.reference.nova.api import versions
from novalab.reference.nova.db.api_models import KeyPair
from novalab.reference.nova.db.models import Instance

MAX = versions.MAX_VERSION


def needs(major: int, minor: int):
    return pytest.mark.skipif(
        MAX < (major, minor),
        reason=f"needs compute microversion {major}.{minor}; novalab's maximum is "
               f"{MAX[0]}.{MAX[1]} (reference/nova/api/versions.py)")


def at(version: str) -> dict:
    return {"OpenStack-API-Version": f"compute {version}"}


# The response bodies, per microversion (additional properties forbidden) ----------------
_FIELDS = {"name": {"type": "string"}, "public_key": {"type": "string"},
           "fingerprint": {"type": "string", "pattern": "^([0-9a-f]{2}:){15,19}[0-9a-f]{2}$"},
           "user_id": {"type": "string"}, "private_key": {"type": "string"},
           "type": {"enum": ["ssh", "x509"]},
           "created_at": {"type": "string",
                          "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$"},
           "deleted": {"const": False}, "deleted_at": {"type": "null"},
           "updated_at": {"type": "null"}, "id": {"type": "integer"}}


def _keypair(required, optional=()) -> dict:
    return {"type": "object", "required": list(required),
            "properties": {k: _FIELDS[k] for k in (*required, *optional)},
            "additionalProperties": False}


_CREATE = ("fingerprint", "name", "public_key", "user_id")
_SHOW = (*_CREATE, "created_at", "deleted", "deleted_at", "id", "updated_at")
_INDEX = ("fingerprint", "name", "public_key")


def _wrapped(key: str, inner: dict, **extra) -> dict:
    return {"type": "object", "required": [key], "properties": {key: inner, **extra},
            "additionalProperties": False}


def _index(inner: dict, links: bool = False) -> dict:
    item = _wrapped("keypair", inner)
    extra = {"keypairs_links": {"type": "array", "items": {
        "type": "object", "required": ["href", "rel"], "additionalProperties": False,
        "properties": {"href": {"type": "string"}, "rel": {"const": "next"}}}}} if links else {}
    return _wrapped("keypairs", {"type": "array", "items": item}, **extra)


RESPONSES = {
    "create 2.1": _wrapped("keypair", _keypair(_CREATE, ["private_key"])),
    "create 2.2": _wrapped("keypair", _keypair((*_CREATE, "type"), ["private_key"])),
    "create 2.92": _wrapped("keypair", _keypair((*_CREATE, "type"))),
    "show 2.1": _wrapped("keypair", _keypair(_SHOW)),
    "show 2.2": _wrapped("keypair", _keypair((*_SHOW, "type"))),
    "index 2.1": _index(_keypair(_INDEX)),
    "index 2.2": _index(_keypair((*_INDEX, "type"))),
    "index 2.35": _index(_keypair((*_INDEX, "type")), links=True),
}


def valid(response, schema: str, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    jsonschema.validate(body, RESPONSES[schema])
    return body


# Keys made outside Nova, and their fingerprints computed outside Nova -------------------

def ssh_public_key(comment: str = "me@laptop") -> str:
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode() + f" {comment}\n"


def md5_fingerprint(public_key: str, tmp_path) -> str:
    """``ssh-keygen -l -E md5`` where installed; else the MD5 of the key's blob."""
    if shutil.which("ssh-keygen"):
        path = tmp_path / "key.pub"
        path.write_text(public_key)
        out = subprocess.run(["ssh-keygen", "-l", "-E", "md5", "-f", str(path)],
                             capture_output=True, text=True, check=True).stdout
        return re.search(r"MD5:([0-9a-f:]+)", out).group(1)
    digest = hashlib.md5(base64.b64decode(public_key.split()[1])).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, 32, 2))


def keypairs_url(session) -> str:
    return f"{session.compute}/os-keypairs"


def post(session, version="2.1", **keypair):
    return session.request("POST", keypairs_url(session), json={"keypair": keypair},
                           headers=at(version))


# 2.1 ------------------------------------------------------------------------------------

def test_generate_list_show_delete_at_2_1(shared_cloud, login, tmp_path):
    demo = login(shared_cloud, "demo")
    created = valid(post(demo, name="gen-21"), "create 2.1", 200)["keypair"]
    private = serialization.load_pem_private_key(created["private_key"].encode(), None)
    derived = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                serialization.PublicFormat.OpenSSH).decode()
    assert created["public_key"] == f"{derived} Generated-by-Nova"
    assert created["fingerprint"] == md5_fingerprint(created["public_key"], tmp_path)

    listed = valid(demo.request("GET", keypairs_url(demo)), "index 2.1", 200)["keypairs"]
    assert {"name": "gen-21", "public_key": created["public_key"],
            "fingerprint": created["fingerprint"]} in [k["keypair"] for k in listed]
    shown = valid(demo.request("GET", f"{keypairs_url(demo)}/gen-21"), "show 2.1",
                  200)["keypair"]
    assert (shown["name"], shown["user_id"], shown["fingerprint"]) == \
        ("gen-21", created["user_id"], created["fingerprint"])
    assert abs((datetime.now(UTC).replace(tzinfo=None)
                - datetime.fromisoformat(shown["created_at"]))
               .total_seconds()) < 120
    # The private key is handed back once and never stored.
    with shared_cloud.wiring.database("test").session() as session:
        row = session.scalars(select(KeyPair).where(KeyPair.name == "gen-21")).one()
        assert row.public_key == created["public_key"] and row.id == shown["id"]

    deleted = demo.request("DELETE", f"{keypairs_url(demo)}/gen-21")
    assert deleted.status_code == 202 and deleted.content == b""
    missing = demo.request("GET", f"{keypairs_url(demo)}/gen-21")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == \
        f"Keypair gen-21 not found for user {created['user_id']}"
    assert demo.request("DELETE", f"{keypairs_url(demo)}/gen-21").status_code == 404


def test_import_keeps_the_key_and_fingerprints_it_as_ssh_keygen(shared_cloud, login,
                                                                tmp_path):
    demo = login(shared_cloud, "demo")
    public_key = ssh_public_key()
    created = valid(post(demo, name="imported", public_key=public_key), "create 2.1",
                    200)["keypair"]
    assert "private_key" not in created
    assert created["public_key"] == public_key
    assert created["fingerprint"] == md5_fingerprint(public_key, tmp_path)
    again = post(demo, name="imported", public_key=ssh_public_key())
    assert again.status_code == 409
    assert again.json()["conflictingRequest"]["message"] == \
        "Key pair 'imported' already exists."
    assert demo.request("DELETE", f"{keypairs_url(demo)}/imported").status_code == 202


@pytest.mark.parametrize(("keypair", "message"), [
    ({"name": "bad", "public_key": "ssh-rsa not-a-key"},
     "Keypair data is invalid: failed to generate fingerprint"),
    ({"name": "bad", "public_key": ""},
     "Keypair data is invalid: failed to generate fingerprint"),
    ({"name": "x" * 256}, "name"),
    ({"name": ""}, "name"),
    ({"name": " lead"}, "name"),
    ({"name": "dots.and@at"}, "name"),  # 2.92's characters, not 2.1's
    ({"name": "a\u00e9"}, "name"),
    ({"name": "t", "type": "ssh"}, "Additional properties are not allowed"),  # 2.2's
    ({"name": "u", "user_id": "someone"}, "Additional properties are not allowed"),  # 2.10's
    ({}, "name"),
])
def test_bodies_are_checked_before_any_work(shared_cloud, login, keypair, message):
    demo = login(shared_cloud, "demo")
    with shared_cloud.wiring.database("test").session() as session:
        before = len(session.scalars(select(KeyPair)).all())
    response = post(demo, **keypair)
    assert response.status_code == 400, response.text
    assert message in response.json()["badRequest"]["message"]
    with shared_cloud.wiring.database("test").session() as session:
        assert len(session.scalars(select(KeyPair)).all()) == before


def test_a_name_of_255_allowed_characters_is_fine(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    name = ("Key_pair- 9" * 24)[:255].strip()
    created = valid(post(demo, name=name, public_key=ssh_public_key()), "create 2.1", 200)
    assert created["keypair"]["name"] == name
    assert demo.request("DELETE", f"{keypairs_url(demo)}/{name}").status_code == 202


def test_key_pairs_are_their_users_own(shared_cloud, login):
    """The reader of the same project neither sees nor deletes demo's key pair, and may
    have one of the same name; an admin's user_id query is ignored at 2.1."""
    demo, reader = login(shared_cloud, "demo"), login(shared_cloud, "reader", "demo")
    mine = valid(post(demo, name="same-name", public_key=ssh_public_key()), "create 2.1",
                 200)["keypair"]
    assert valid(reader.request("GET", keypairs_url(reader)), "index 2.1",
                 200)["keypairs"] == []
    assert reader.request("GET", f"{keypairs_url(reader)}/same-name").status_code == 404
    assert reader.request("DELETE", f"{keypairs_url(reader)}/same-name").status_code == 404
    theirs = valid(post(reader, name="same-name", public_key=ssh_public_key()),
                   "create 2.1", 200)["keypair"]
    assert theirs["user_id"] != mine["user_id"]
    admin = login(shared_cloud, "admin")
    shown = admin.request("GET", f"{keypairs_url(admin)}/same-name",
                          params={"user_id": mine["user_id"]})
    assert shown.status_code == 404  # 2.1 reads no user_id: the admin's own, none
    for session in (demo, reader):
        assert session.request("DELETE", f"{keypairs_url(session)}/same-name").status_code \
            == 202


def test_the_key_pairs_quota_counts_each_users_pairs(cloud, login):
    admin, alt = login(cloud, "admin"), login(cloud, "alt_demo")
    quota = f"{admin.compute}/os-quota-sets/{alt.project_id}"
    assert admin.request("PUT", quota, json={"quota_set": {"key_pairs": 2}}).status_code \
        == 200
    for name in ("k1", "k2"):
        assert post(alt, name=name, public_key=ssh_public_key()).status_code == 200
    for refused in (post(alt, name="k3", public_key=ssh_public_key()),
                    post(alt, name="k4")):
        assert refused.status_code == 403
        assert refused.json()["forbidden"]["message"] == "Quota exceeded, too many key pairs."
    listed = alt.request("GET", keypairs_url(alt)).json()["keypairs"]
    assert sorted(k["keypair"]["name"] for k in listed) == ["k1", "k2"]
    assert alt.request("DELETE", f"{keypairs_url(alt)}/k1").status_code == 202
    assert post(alt, name="k3", public_key=ssh_public_key()).status_code == 200


# Later microversions ------------------------------------------------------------------

@needs(2, 2)
def test_type_and_statuses_from_2_2(shared_cloud, login, tmp_path):
    demo = login(shared_cloud, "demo")
    ssh = valid(post(demo, "2.2", name="typed", public_key=ssh_public_key()), "create 2.2",
                201)["keypair"]
    assert ssh["type"] == "ssh"
    x509 = valid(post(demo, "2.2", name="winrm", type="x509"), "create 2.2", 201)["keypair"]
    cert = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha1"],
                          input=x509["public_key"], capture_output=True, text=True)
    if cert.returncode == 0:  # openssl is there to ask
        assert cert.stdout.strip().split("=", 1)[1].lower() == x509["fingerprint"]
    assert x509["type"] == "x509" and x509["private_key"]
    listed = valid(demo.request("GET", keypairs_url(demo), headers=at("2.2")), "index 2.2",
                   200)["keypairs"]
    assert {(k["keypair"]["name"], k["keypair"]["type"]) for k in listed} >= \
        {("typed", "ssh"), ("winrm", "x509")}
    shown = valid(demo.request("GET", f"{keypairs_url(demo)}/winrm", headers=at("2.2")),
                  "show 2.2", 200)["keypair"]
    assert shown["type"] == "x509"
    for name in ("typed", "winrm"):
        deleted = demo.request("DELETE", f"{keypairs_url(demo)}/{name}", headers=at("2.2"))
        assert deleted.status_code == 204


@needs(2, 10)
def test_an_admin_acts_for_another_user_from_2_10(shared_cloud, login):
    admin, demo = login(shared_cloud, "admin"), login(shared_cloud, "demo")
    demo_id = valid(post(demo, name="probe", public_key=ssh_public_key()), "create 2.1",
                    200)["keypair"]["user_id"]
    made = valid(post(admin, "2.10", name="for-demo", public_key=ssh_public_key(),
                      user_id=demo_id), "create 2.2", 201)["keypair"]
    assert made["user_id"] == demo_id
    names = {k["keypair"]["name"] for k in demo.request("GET", keypairs_url(demo)).json()[
        "keypairs"]}
    assert {"probe", "for-demo"} <= names
    listed = admin.request("GET", keypairs_url(admin), params={"user_id": demo_id},
                           headers=at("2.10"))
    assert {"probe", "for-demo"} <= {k["keypair"]["name"] for k in listed.json()["keypairs"]}
    # A member may not act for another user, even of the same project.
    refused = post(demo, "2.10", name="theirs", public_key=ssh_public_key(),
                   user_id="someone-else")
    assert refused.status_code == 403
    assert demo.request("GET", keypairs_url(demo), params={"user_id": "someone-else"},
                        headers=at("2.10")).status_code == 403
    for name in ("probe", "for-demo"):
        assert admin.request("DELETE", f"{keypairs_url(admin)}/{name}",
                             params={"user_id": demo_id}, headers=at("2.10")).status_code \
            == 204


@needs(2, 35)
def test_pages_by_name_from_2_35(cloud, login):
    demo = login(cloud, "demo")
    for name in ("kp-c", "kp-a", "kp-b"):
        assert post(demo, name=name, public_key=ssh_public_key()).status_code == 200
    url = keypairs_url(demo)
    first = valid(demo.request("GET", url, params={"limit": "2"}, headers=at("2.35")),
                  "index 2.35", 200)
    assert [k["keypair"]["name"] for k in first["keypairs"]] == ["kp-a", "kp-b"]
    (link,) = first["keypairs_links"]
    assert link["href"].endswith("/v2.1/os-keypairs?limit=2&marker=kp-b")
    rest = valid(demo.request("GET", link["href"], headers=at("2.35")), "index 2.35", 200)
    assert [k["keypair"]["name"] for k in rest["keypairs"]] == ["kp-c"]
    assert "keypairs_links" not in rest
    # Below 2.35 limit and marker are not read.
    older = demo.request("GET", url, params={"limit": "1"}, headers=at("2.34"))
    assert len(older.json()["keypairs"]) == 3 and "keypairs_links" not in older.json()
    unknown = demo.request("GET", url, params={"marker": "nope"}, headers=at("2.35"))
    assert unknown.status_code == 400
    assert unknown.json()["badRequest"]["message"] == "Marker nope could not be found."
    for bad in ("-1", "x", ""):
        assert demo.request("GET", url, params={"limit": bad},
                            headers=at("2.35")).status_code == 400


@needs(2, 92)
def test_import_only_from_2_92(shared_cloud, login):
    demo = login(shared_cloud, "demo")
    refused = post(demo, "2.92", name="no-generation")
    assert refused.status_code == 400
    assert "public_key" in refused.json()["badRequest"]["message"]
    made = valid(post(demo, "2.92", name="me@host.example", public_key=ssh_public_key()),
                 "create 2.92", 201)
    assert made["keypair"]["name"] == "me@host.example"
    assert demo.request("DELETE", f"{keypairs_url(demo)}/me@host.example",
                        headers=at("2.92")).status_code == 204


# Servers with a key ---------------------------------------------------------------------

def _boot(session, cloud, name: str, **extra):
    body = {"server": {"name": name, "flavorRef": "42", "imageRef": cloud.cirros["id"],
                       **extra}}
    return session.request("POST", f"{session.compute}/servers", json=body)


@pytest.mark.parametrize("topology", ["classic", "modern"])
def test_key_name_at_create(cloud_factory, login, topology):
    """An unknown key (or another user's) is Nova's 400 before any row; a known one is
    stored with the instance (name and public key) and shown as key_name."""
    cloud = cloud_factory(topology=topology)
    demo, other = login(cloud, "demo"), login(cloud, "alt_demo")
    public_key = ssh_public_key()
    assert post(demo, name="boot-key", public_key=public_key).status_code == 200
    for session, key in ((demo, "nosuchkey"), (other, "boot-key")):
        refused = _boot(session, cloud, "no-key-vm", key_name=key)
        assert refused.status_code == 400
        assert refused.json()["badRequest"]["message"] == "Invalid key_name provided."
    for session in (demo, other):
        assert session.request("GET", f"{session.compute}/servers").json()["servers"] == []

    made = _boot(demo, cloud, "key-vm", key_name="boot-key")
    assert made.status_code == 202, made.text
    server_id = made.json()["server"]["id"]
    server = demo.client.wait_for_server(server_id)
    assert (server["status"], server["key_name"]) == ("ACTIVE", "boot-key")
    # The instance keeps the pair: deleting the pair changes nothing for the server.
    assert demo.request("DELETE", f"{keypairs_url(demo)}/boot-key").status_code == 202
    with cloud.wiring.database("test").session() as session:
        row = session.scalars(select(Instance).where(Instance.uuid == server_id)).one()
        assert (row.key_name, row.key_data) == ("boot-key", public_key)
        assert [(k["name"], k["type"]) for k in row.keypairs] == [("boot-key", "ssh")]
    shown = demo.request("GET", f"{demo.compute}/servers/{server_id}").json()["server"]
    assert shown["key_name"] == "boot-key"
