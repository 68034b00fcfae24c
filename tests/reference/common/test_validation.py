"""Bodies are checked against their schema before the view runs, with Nova's wording."""

from __future__ import annotations

import pytest
from flask import Flask, jsonify

from novalab.reference.common import validation
from novalab.reference.common.wsgi import install_common_handlers, json_body

types = validation.parameter_types

SCHEMA = {
    "type": "object",
    "properties": {"server": {
        "type": "object",
        "properties": {"name": types.name(), "count": types.positive_integer(100),
                       "cidr": {"type": "string", "format": "cidr"},
                       "mac": {"type": "string", "format": "mac-address"},
                       "id": types.uuid(), "metadata": types.metadata(max_items=2)},
        "required": ["name"],
        "additionalProperties": False,
    }},
    "required": ["server"],
}


@pytest.fixture(scope="module")
def client():
    app = Flask("validation-test")
    install_common_handlers(app)
    ran = []

    @app.post("/servers")
    @validation.schema(SCHEMA)
    def create():
        ran.append(json_body())
        return jsonify(ok=True), 202

    @app.put("/images/<image_id>/file")
    @validation.raw_body("image data is bytes")
    def upload(image_id):
        return "", 204

    app.ran = ran
    test_client = app.test_client()
    test_client.app = app
    return test_client


@pytest.mark.parametrize("server, fragment", [
    ({}, "'name' is a required property"),
    ({"name": {"a": 1}}, "is not of type 'string'"),
    ({"name": " padded"}, "field/attribute name."),
    ({"name": "x" * 256}, "is too long"),
    ({"name": "a", "count": "0"}, "is not of type 'integer'"),
    ({"name": "a", "count": 10**30}, "is greater than the maximum"),
    ({"name": "a", "count": 0}, "is less than the minimum"),
    ({"name": "a", "cidr": "10.0.0.0"}, "is not a 'cidr'"),
    ({"name": "a", "mac": "zz:zz"}, "is not a 'mac-address'"),
    ({"name": "a", "id": "../../etc#x"}, "is not a 'uuid'"),
    ({"name": "a", "metadata": {"a": "1", "b": "2", "c": "3"}}, "too many properties"),
    ({"name": "a", "surprise": 1}, "Additional properties are not allowed"),
])
def test_a_body_that_breaks_a_rule_is_a_400_naming_it_and_the_view_never_runs(
        client, server, fragment):
    before = len(client.app.ran)
    response = client.post("/servers", json={"server": server})
    assert response.status_code == 400
    message = response.get_json()["badRequest"]["message"]
    assert fragment in message
    assert len(client.app.ran) == before


def test_a_body_that_fits_reaches_the_view(client):
    response = client.post("/servers", json={"server": {
        "name": "vm 1", "count": 3, "cidr": "10.0.0.0/24", "mac": "fa:16:3e:00:00:01",
        "id": "0b6ee1f6-5dd1-4f6a-9d62-0c5a2c1f3a11", "metadata": {"k": "v"}}})
    assert response.status_code == 202
    assert client.app.ran[-1]["server"]["name"] == "vm 1"


@pytest.mark.parametrize("data", [b"", b"{", b"[1, 2]", b'"text"'])
def test_bodies_that_are_not_a_json_object_are_400(client, data):
    response = client.post("/servers", data=data, content_type="application/json")
    assert response.status_code == 400
    assert "badRequest" in response.get_json()


def test_a_json_body_over_the_size_limit_is_413_before_it_is_read(client):
    response = client.post("/servers", data=b"{" + b" " * 200_000 + b"}",
                           content_type="application/json")
    assert response.status_code == 413
    assert response.get_json()["overLimit"]["code"] == 413


def test_raw_bodies_are_left_to_their_own_bounds_and_listed_apart(client):
    response = client.put("/images/x/file", data=b"\0" * 200_000,
                          content_type="application/octet-stream")
    assert response.status_code == 204
    routes = validation.routes_with_schemas(client.app)
    assert routes == [("POST", "/servers", SCHEMA)]


def test_a_lone_surrogate_is_a_400_not_a_500_downstream(client):
    before = len(client.app.ran)
    response = client.post("/servers", data=b'{"server": {"name": "\\ud800"}}',
                           content_type="application/json")
    assert response.status_code == 400
    assert "lone surrogate" in response.get_json()["badRequest"]["message"]
    assert len(client.app.ran) == before
