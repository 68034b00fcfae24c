"""Glance's v2 API in small: version discovery, images and their data.

``POST /v2/images`` registers a record, ``PUT /v2/images/{id}/file`` uploads the
bytes to the store, ``GET .../file`` streams them back with ``Content-MD5``.
Unknown or invisible images are 404; a create body is checked against the image
schema before anything else; image data streams into the store, bounded by the
project's quota and ``image_size_cap``.
"""

from __future__ import annotations

from flask import Flask, Response, g, jsonify, request

from novalab.reference.common import exception, validation
from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.wsgi import install_common_handlers, json_body, keystone_fault
from novalab.reference.glance import schemas
from novalab.reference.glance.changes import ImageChanges, parse_patch, patch_body
from novalab.reference.glance.core import ImageRepo
from novalab.reference.glance.store import CHUNK
from novalab.tracing.http import instrument_flask


def create_app(repo: ImageRepo, auth: AuthProtocol, tracer_provider=None) -> Flask:
    app = Flask("glance-api")
    if tracer_provider is not None:
        # First, so the SERVER span also covers the auth and version hooks below.
        instrument_flask(app, tracer_provider)
    install_common_handlers(app, fault=keystone_fault)
    auth.install(app, public_paths=("", "/versions"))

    def versions_doc():
        base = request.host_url.rstrip("/")
        return {"versions": [
            {"id": "v2.9", "status": "CURRENT", "links": [{"rel": "self", "href": f"{base}/v2/"}]},
        ]}

    @app.get("/")
    def versions():
        response = jsonify(versions_doc())
        response.status_code = 300
        return response

    @app.get("/versions")
    def versions_list():
        return jsonify(versions_doc())

    @app.get("/v2/images")
    def index():
        limit = request.args.get("limit", type=int)
        if limit is not None and limit < 0:
            raise exception.Invalid("limit param must be positive")
        images = repo.list(g.context, name=request.args.get("name"), limit=limit,
                           marker=request.args.get("marker"),
                           os_hidden=request.args.get("os_hidden", "").lower() == "true",
                           tags=request.args.getlist("tag"),
                           visibility=request.args.get("visibility"))
        body = {"images": images, "schema": "/v2/schemas/images", "first": "/v2/images"}
        if limit and len(images) == limit:
            body["next"] = f"/v2/images?marker={images[-1]['id']}&limit={limit}"
        return jsonify(body)

    @app.get("/v2/images/<image_id>")
    def show(image_id):
        return jsonify(repo.get(g.context, image_id))

    @app.post("/v2/images")
    @validation.schema(schemas.IMAGE_CREATE)
    def create():
        image = repo.create_from_request(g.context, json_body())
        response = jsonify(image)
        response.status_code = 201
        response.headers["Location"] = f"{request.host_url.rstrip('/')}/v2/images/{image['id']}"
        return response

    @app.put("/v2/images/<image_id>/file")
    @validation.raw_body("image data: application/octet-stream, bounded by quota and "
                         "image_size_cap")
    def upload(image_id):
        content_type = request.headers.get("Content-Type", "application/octet-stream")
        if content_type.split(";")[0].strip() != "application/octet-stream":
            raise _unsupported(content_type)
        repo.upload(g.context, image_id, _chunks(request.stream), request.content_length)
        return "", 204

    @app.get("/v2/images/<image_id>/file")
    def download(image_id):
        image, data = repo.download(g.context, image_id)
        if data is None:
            return "", 204
        return Response(data, mimetype="application/octet-stream",
                        headers={"Content-MD5": image["checksum"],
                                 "Content-Length": str(len(data))})

    @app.delete("/v2/images/<image_id>")
    def delete(image_id):
        repo.delete(g.context, image_id)
        return "", 204

    changes = ImageChanges(repo)

    @app.patch("/v2/images/<image_id>")
    @validation.schema(schemas.IMAGE_PATCH, loader=patch_body)
    def update(image_id):
        """``openstack image set``: a JSON patch, its media type glance's v2.1."""
        return jsonify(changes.update(g.context, image_id, parse_patch(patch_body())))

    @app.put("/v2/images/<image_id>/tags/<tag>")
    @validation.raw_body("a tag is its URL: glance reads no body")
    def add_tag(image_id, tag):
        changes.add_tag(g.context, image_id, tag)
        return "", 204

    @app.delete("/v2/images/<image_id>/tags/<tag>")
    def delete_tag(image_id, tag):
        changes.delete_tag(g.context, image_id, tag)
        return "", 204

    @app.post("/v2/images/<image_id>/actions/deactivate")
    @validation.raw_body("an action is its URL: glance reads no body")
    def deactivate(image_id):
        changes.deactivate(g.context, image_id)
        return "", 204

    @app.post("/v2/images/<image_id>/actions/reactivate")
    @validation.raw_body("an action is its URL: glance reads no body")
    def reactivate(image_id):
        changes.reactivate(g.context, image_id)
        return "", 204

    @app.get("/v2/schemas/image")
    def image_schema():
        return jsonify(schemas.IMAGE_SCHEMA)

    @app.get("/v2/schemas/images")
    def images_schema():
        return jsonify(schemas.IMAGES_SCHEMA)

    return app


def _chunks(stream):
    """The request body as it arrives, a chunk at a time (never read whole)."""
    while chunk := stream.read(CHUNK):
        yield chunk


class UnsupportedMediaType(exception.NovaLabException):
    code = 415


def _unsupported(content_type: str):
    return UnsupportedMediaType(f"Content-Type {content_type} is not supported; "
                                "use application/octet-stream")
