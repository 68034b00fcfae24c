"""ceph-rgw: the RADOS Gateway, an object store with a Swift REST API on top of RADOS.

Glance (its Swift store) and clients speak HTTP to rgw; rgw turns each request
into librados ops on the OSDs. The subset here is what Glance and the
``openstack container``/``object`` commands use, under ``/swift/v1``:

==================  ==========================================================
``GET /``           S3's anonymous bucket list (what health checks probe)
``GET /info``       Swift capabilities (also ``/swift/info``), no token needed
``GET  /swift/v1``  the account's containers (``?format=json``)
``PUT/HEAD/GET/DELETE /swift/v1/<container>``           create / stat / list / delete
``PUT/HEAD/GET/DELETE /swift/v1/<container>/<object>``  store / stat / fetch / delete
==================  ==========================================================

**Authentication** is Keystone's: the token is validated with the gateway's
service user (rgw's ``rgw_keystone_admin_user``; keystonemiddleware here). The
token must carry one of ``ACCEPTED_ROLES`` (``rgw_keystone_accepted_roles``);
containers belong to the token's project, and a role in ``ADMIN_ROLES``
(``rgw_keystone_accepted_admin_roles``) reaches every project's containers.

**Where the bytes go** (rgw's own pools, created at start as radosgw does):

* ``default.rgw.meta``: ``.bucket.meta.<container>`` (owner, creation time) and
  ``<project>.buckets``, an omap listing the project's containers;
* ``default.rgw.buckets.index``: ``.dir.<container>``, the container's index: an
  omap of object name -> size, ETag, content type, time (what listings read);
* ``default.rgw.buckets.data``: the *head* object ``<container>/<object>`` with the
  first 4 MiB (``rgw_max_chunk_size``) and, as xattrs, the ETag (MD5), content type,
  metadata and the *manifest*; the rest in 4 MiB *tail* objects
  ``<container>__shadow_<tag>_<n>``, a fresh ``tag`` per upload (no ``/``, so a tail
  name is never a head name).

A PUT writes the tails, then the head with its xattrs in one op: that is the
commit, so a failed upload leaves the previous version whole (and its own tails
are removed); then the index entry; then the old version's tails go. Real rgw
names heads after the bucket's *marker* (an instance id), defers tail removal to
its garbage collector and updates the index in two phases through an OSD object
class. A GET here reads the whole object before answering (fine for images of
tens of MiB; rgw streams). Left out: S3, ranges, large-object manifests (DLO/SLO),
ACLs, versioning, quotas, multisite.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import uuid
from datetime import UTC, datetime

from flask import Flask, Response, g, jsonify, request
from opentelemetry import trace
from werkzeug.http import http_date

from novalab.reference.ceph import errors
from novalab.reference.ceph.rados import Rados
from novalab.reference.common import exception, validation
from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.faults import NO_FAULTS
from novalab.reference.common.wsgi import REQUEST_ID_HEADER, install_common_handlers
from novalab.tracing import attributes as attr
from novalab.tracing.http import instrument_flask

META_POOL = "default.rgw.meta"
INDEX_POOL = "default.rgw.buckets.index"
DATA_POOL = "default.rgw.buckets.data"
POOLS = (META_POOL, INDEX_POOL, DATA_POOL)

CHUNK_SIZE = 4 << 20                     # rgw_max_chunk_size
MAX_FILE_SIZE = 5 << 30                  # rgw_max_put_size
CONTAINER_LISTING_LIMIT = 10000
MAX_CONTAINER_NAME = 255
MAX_OBJECT_NAME = 1024
ACCEPTED_ROLES = ("member", "admin", "service")   # our rgw_keystone_accepted_roles
ADMIN_ROLES = ("admin",)                          # our rgw_keystone_accepted_admin_roles

ATTR_ETAG = "user.rgw.etag"
ATTR_CONTENT_TYPE = "user.rgw.content_type"
ATTR_MANIFEST = "user.rgw.manifest"
ATTR_MTIME = "user.rgw.mtime"
ATTR_META_PREFIX = "user.rgw.x-amz-meta-"   # rgw keeps Swift's X-Object-Meta-* here too

UPSTREAM_RGW_OP = "https://github.com/ceph/ceph/blob/main/src/rgw/rgw_op.cc"


class UnprocessableEntity(exception.NovaLabException):
    msg_fmt = "Unprocessable Entity"
    code = 422


class RequestEntityTooLarge(exception.NovaLabException):
    msg_fmt = "Your request is too large."
    code = 413


def rgw_op(qualname: str):
    """An INTERNAL span for the rgw operation a request runs (``RGWPutObj::execute``)."""
    static = {attr.CODE_FUNCTION_NAME: qualname, attr.CODE_FILE_PATH: "src/rgw/rgw_op.cc",
              attr.UPSTREAM_URL: UPSTREAM_RGW_OP}

    def decorate(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            with self.tracer.start_as_current_span(qualname, attributes=static):
                return func(self, *args, **kwargs)
        return wrapper
    return decorate


def _isotime(mtime: float) -> str:
    return datetime.fromtimestamp(mtime, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


def _read_chunk(stream, size: int) -> bytes:
    """Up to ``size`` bytes from the request body (fewer only at its end)."""
    parts, wanted = [], size
    while wanted:
        data = stream.read(wanted)
        if not data:
            break
        parts.append(data)
        wanted -= len(data)
    return b"".join(parts)


def _corrupt(data: bytes) -> bytes:
    """The image-checksum fault: the same length, the last byte's bits flipped.

    What a bad disk, a bad NIC or a bug between the OSD and the client would
    serve: the stored ETag still goes out, so only a reader that checks the
    bytes (nova-compute does, against Glance's checksums) finds out.
    """
    return data[:-1] + bytes([data[-1] ^ 0xFF])


def _remove_quietly(ioctx, oid: str) -> None:
    try:
        ioctx.remove(oid)
    except errors.ObjectNotFound:
        pass


class Gateway:
    """The object store behind the REST API: containers and objects on RADOS."""

    def __init__(self, rados: Rados, tracer: trace.Tracer):
        self.rados = rados
        self.tracer = tracer
        self.faults = NO_FAULTS  # the deployment's, set by its builder

    def start(self) -> Gateway:
        for pool in POOLS:
            if not self.rados.pool_exists(pool):
                self.rados.create_pool(pool)
        self.meta = self.rados.open_ioctx(META_POOL)
        self.index = self.rados.open_ioctx(INDEX_POOL)
        self.data = self.rados.open_ioctx(DATA_POOL)
        return self

    # Names ----------------------------------------------------------------------------------

    @staticmethod
    def head_oid(container: str, name: str) -> str:
        return f"{container}/{name}"

    @staticmethod
    def tail_oid(container: str, tag: str, number: int) -> str:
        return f"{container}__shadow_{tag}_{number}"

    # Containers -----------------------------------------------------------------------------

    def container(self, name: str, context=None) -> dict:
        """The container's record; 404 if none, 403 if ``context`` may not use it."""
        try:
            info = json.loads(self.meta.read(f".bucket.meta.{name}"))
        except errors.ObjectNotFound as exc:
            raise exception.NotFound(f"Container {name} not found.") from exc
        if context is not None and info["owner"] != context.project_id and \
                not set(context.roles) & set(ADMIN_ROLES):
            raise exception.Forbidden("Access was denied to this resource.")
        return info

    @rgw_op("RGWCreateBucket::execute")
    def create_container(self, name: str, owner: str) -> bool:
        """Create ``name`` for project ``owner``; False if that project has it already."""
        record = json.dumps({"name": name, "owner": owner, "created": time.time()}).encode()
        try:
            self.meta.create(f".bucket.meta.{name}", record)
        except errors.ObjectExists as exc:
            if json.loads(self.meta.read(f".bucket.meta.{name}"))["owner"] != owner:
                raise exception.Conflict("The requested bucket name is not available.") from exc
            return False
        try:
            self.index.create(f".dir.{name}")
            self.meta.set_omap(f"{owner}.buckets", {name: json.dumps({"created": time.time()})})
        except BaseException:
            _remove_quietly(self.index, f".dir.{name}")
            _remove_quietly(self.meta, f".bucket.meta.{name}")
            raise
        return True

    @rgw_op("RGWDeleteBucket::execute")
    def delete_container(self, name: str, context) -> None:
        info = self.container(name, context)
        entries, _ = self.index.get_omap_vals(f".dir.{name}", max_return=1)
        if entries:
            raise exception.Conflict("There was a conflict when trying to complete your "
                                     "request.")
        self.meta.remove_omap_keys(f"{info['owner']}.buckets", [name])
        _remove_quietly(self.index, f".dir.{name}")
        _remove_quietly(self.meta, f".bucket.meta.{name}")

    @rgw_op("RGWListBuckets::execute")
    def list_containers(self, owner: str) -> list[dict]:
        try:
            names, _ = self.meta.get_omap_vals(f"{owner}.buckets", max_return=1000)
        except errors.ObjectNotFound:
            return []
        result = []
        for name in names:
            count, used = self.container_stats(name)
            result.append({"name": name, "count": count, "bytes": used})
        return result

    def _index_pages(self, container: str, start_after: str = "", prefix: str = ""):
        while True:
            values, more = self.index.get_omap_vals(f".dir.{container}", start_after, prefix)
            for key, value in values.items():
                yield key, json.loads(value)
            if not more or not values:
                return
            start_after = max(values)

    def container_stats(self, container: str) -> tuple[int, int]:
        """Object count and bytes used (rgw keeps these in the index header; we count)."""
        count = used = 0
        for _name, entry in self._index_pages(container):
            count, used = count + 1, used + entry["bytes"]
        return count, used

    @rgw_op("RGWListBucket::execute")
    def list_objects(self, container: str, context, *, marker: str = "", prefix: str = "",
                     limit: int = CONTAINER_LISTING_LIMIT) -> list[dict]:
        self.container(container, context)
        listing = []
        for name, entry in self._index_pages(container, marker, prefix):
            if len(listing) == limit:
                break
            listing.append({"name": name, **entry})
        return listing

    # Objects --------------------------------------------------------------------------------

    @rgw_op("RGWPutObj::execute")
    def put_object(self, container: str, name: str, stream, context, *,
                   content_type: str = "application/octet-stream",
                   expected_etag: str | None = None, meta: dict | None = None) -> dict:
        """Store the body of ``stream``; returns the index entry of the new version."""
        self.container(container, context)
        tag, md5 = uuid.uuid4().hex, hashlib.md5(usedforsecurity=False)
        head = _read_chunk(stream, CHUNK_SIZE)
        md5.update(head)
        size, tails = len(head), 0
        try:
            while chunk := _read_chunk(stream, CHUNK_SIZE):
                tails += 1
                self.data.write_full(self.tail_oid(container, tag, tails), chunk)
                md5.update(chunk)
                size += len(chunk)
            etag = md5.hexdigest()
            if expected_etag and expected_etag.strip('"').lower() != etag:
                raise UnprocessableEntity("The ETag you sent does not match the MD5 of the "
                                          "object's data.")
            try:
                previous = self.data.get_xattrs(self.head_oid(container, name))
            except errors.ObjectNotFound:
                previous = {}
            mtime = time.time()
            xattrs = {ATTR_ETAG: etag, ATTR_CONTENT_TYPE: content_type, ATTR_MTIME: repr(mtime),
                      ATTR_MANIFEST: json.dumps({"size": size, "head_size": len(head),
                                                 "tag": tag, "tails": tails,
                                                 "chunk_size": CHUNK_SIZE})}
            for key, value in (meta or {}).items():
                xattrs[ATTR_META_PREFIX + key.lower()] = value
            self.data.write_full(self.head_oid(container, name), head, xattrs)  # the commit
        except BaseException:
            for number in range(1, tails + 1):
                _remove_quietly(self.data, self.tail_oid(container, tag, number))
            raise
        entry = {"bytes": size, "hash": etag, "content_type": content_type,
                 "last_modified": _isotime(mtime)}
        self.index.set_omap(f".dir.{container}", {name: json.dumps(entry)})
        self._remove_tails(container, previous)
        return entry

    def _remove_tails(self, container: str, xattrs: dict) -> None:
        if ATTR_MANIFEST in xattrs:
            manifest = json.loads(xattrs[ATTR_MANIFEST])
            for number in range(1, manifest["tails"] + 1):
                _remove_quietly(self.data, self.tail_oid(container, manifest["tag"], number))

    @rgw_op("RGWGetObj::execute")
    def get_object(self, container: str, name: str, context,
                   with_data: bool = True) -> tuple[dict, bytes]:
        """The object's attributes and (unless ``with_data`` is False, for HEAD) bytes."""
        self.container(container, context)
        oid = self.head_oid(container, name)
        for attempt in range(2):
            try:
                if not with_data:
                    return self.data.get_xattrs(oid), b""
                head, xattrs = self.data.read_with_xattrs(oid)
            except errors.ObjectNotFound as exc:
                raise exception.NotFound("The resource could not be found.") from exc
            manifest = json.loads(xattrs[ATTR_MANIFEST])
            try:
                parts = [head] + [self.data.read(self.tail_oid(container, manifest["tag"], n))
                                  for n in range(1, manifest["tails"] + 1)]
            except errors.ObjectNotFound:
                if attempt:
                    raise
                continue  # overwritten while we read: read the new version
            data = b"".join(parts)
            if data and self.faults.active("image-checksum", object=name):
                data = _corrupt(data)
            return xattrs, data
        raise AssertionError("unreachable")

    @rgw_op("RGWDeleteObj::execute")
    def delete_object(self, container: str, name: str, context) -> None:
        self.container(container, context)
        oid = self.head_oid(container, name)
        try:
            xattrs = self.data.get_xattrs(oid)
            self.data.remove(oid)
        except errors.ObjectNotFound as exc:
            self.index.remove_omap_keys(f".dir.{container}", [name])
            raise exception.NotFound("The resource could not be found.") from exc
        self.index.remove_omap_keys(f".dir.{container}", [name])
        self._remove_tails(container, xattrs)


# The REST API ------------------------------------------------------------------------------

def swift_fault(code: int, message: str) -> Response:
    """Swift's error body: a line of HTML naming the status."""
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              409: "Conflict", 411: "Length Required", 413: "Request Entity Too Large",
              422: "Unprocessable Entity", 503: "Service Unavailable",
              507: "Insufficient Storage"}
    title = titles.get(code, "Internal Server Error")
    body = f"<html><h1>{title}</h1><p>{message}</p></html>"
    return Response(body, status=code, content_type="text/html; charset=UTF-8")


def capabilities() -> dict:
    return {"swift": {"version": "2.17.0", "max_file_size": MAX_FILE_SIZE,
                      "container_listing_limit": CONTAINER_LISTING_LIMIT,
                      "max_object_name_length": MAX_OBJECT_NAME,
                      "max_container_name_length": MAX_CONTAINER_NAME,
                      "policies": [{"name": "default-placement", "default": True}],
                      "strict_cors_mode": True},
            "tempurl": {"methods": []}}


def _object_headers(xattrs: dict) -> dict:
    manifest = json.loads(xattrs[ATTR_MANIFEST])
    mtime = float(xattrs[ATTR_MTIME])
    headers = {"Content-Type": xattrs[ATTR_CONTENT_TYPE], "ETag": xattrs[ATTR_ETAG],
               "Content-Length": str(manifest["size"]), "Last-Modified": http_date(mtime),
               "X-Timestamp": f"{mtime:.5f}", "Accept-Ranges": "bytes"}
    for key, value in xattrs.items():
        if key.startswith(ATTR_META_PREFIX):
            headers["X-Object-Meta-" + key.removeprefix(ATTR_META_PREFIX).title()] = value
    return headers


def _check_name(value: str, limit: int, what: str) -> None:
    if not value or len(value.encode()) > limit:
        raise exception.Invalid(f"{what} name must be 1 to {limit} bytes long.")


def _wants_json() -> bool:
    fmt = request.args.get("format")
    if fmt:
        return fmt == "json"
    return request.accept_mimetypes.best == "application/json"


def trans_id() -> str:
    """rgw's transaction id: ``tx`` + 21 hex digits, the time in hex, the zone group."""
    return f"tx{uuid.uuid4().hex[:21]}-{int(time.time()):08x}-default"


def create_app(gateway: Gateway, auth: AuthProtocol, tracer_provider=None) -> Flask:
    app = Flask("ceph-rgw")
    if tracer_provider is not None:
        # First, so the SERVER span also covers the token check below.
        instrument_flask(app, tracer_provider)
    # Swift's transaction id is rgw's request id, answered under both names.
    install_common_handlers(app, fault=swift_fault,
                            request_id_headers=("X-Trans-Id", REQUEST_ID_HEADER),
                            new_request_id=trans_id)
    auth.install(app, public_paths=("/info", "/swift/info"))

    @app.before_request
    def _accepted_role():
        context = g.get("context")
        if context is not None and not set(context.roles) & set(ACCEPTED_ROLES):
            return swift_fault(403, "Access was denied to this resource.")
        return None

    @app.errorhandler(errors.Error)
    def _rados_error(exc):
        if isinstance(exc, errors.NoSpace):  # full OSDs: a Swift full drive's 507
            return swift_fault(507, "The cluster is full: no object can be written.")
        unavailable = isinstance(exc, errors.ConnectionFailed | errors.TimedOut | errors.NoUpOSD)
        return swift_fault(503 if unavailable else 500, f"RADOS error {exc.code}: {exc}")

    @app.get("/")
    def anonymous_list():
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListAllMyBucketsResult '
                'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>anonymous</ID>'
                "<DisplayName></DisplayName></Owner><Buckets></Buckets></ListAllMyBucketsResult>")
        return Response(body, content_type="application/xml")

    @app.get("/info")
    @app.get("/swift/info")
    def info():
        return jsonify(capabilities())

    @app.route("/swift/v1", methods=["GET", "HEAD"])
    @app.route("/swift/v1/", methods=["GET", "HEAD"])
    def account():
        containers = gateway.list_containers(g.context.project_id)
        headers = {"X-Account-Container-Count": str(len(containers)),
                   "X-Account-Object-Count": str(sum(c["count"] for c in containers)),
                   "X-Account-Bytes-Used": str(sum(c["bytes"] for c in containers))}
        return _listing(containers, headers)

    @app.route("/swift/v1/<container>", methods=["PUT"])
    @validation.raw_body("Swift reads a container PUT's headers; its body is ignored")
    def create_container(container):
        _check_name(container, MAX_CONTAINER_NAME, "Container")
        created = gateway.create_container(container, g.context.project_id)
        return Response(status=201 if created else 202)

    @app.route("/swift/v1/<container>", methods=["GET", "HEAD"])
    def container_listing(container):
        limit = request.args.get("limit", CONTAINER_LISTING_LIMIT, type=int)
        if limit < 0 or limit > CONTAINER_LISTING_LIMIT:
            raise exception.Invalid(f"limit must be 0 to {CONTAINER_LISTING_LIMIT}.")
        listing = gateway.list_objects(container, g.context,
                                       marker=request.args.get("marker", ""),
                                       prefix=request.args.get("prefix", ""), limit=limit)
        count, used = gateway.container_stats(container)
        headers = {"X-Container-Object-Count": str(count), "X-Container-Bytes-Used": str(used)}
        return _listing(listing, headers)

    @app.route("/swift/v1/<container>", methods=["DELETE"])
    def delete_container(container):
        gateway.delete_container(container, g.context)
        return Response(status=204)

    @app.route("/swift/v1/<container>/<path:obj>", methods=["PUT"])
    @validation.raw_body("object data: any bytes, bounded by MAX_FILE_SIZE")
    def put_object(container, obj):
        _check_name(obj, MAX_OBJECT_NAME, "Object")
        if request.content_length is not None and request.content_length > MAX_FILE_SIZE:
            raise RequestEntityTooLarge()
        meta = {key[len("X-Object-Meta-"):]: value for key, value in request.headers.items()
                if key.lower().startswith("x-object-meta-")}
        entry = gateway.put_object(
            container, obj, request.stream, g.context,
            content_type=request.headers.get("Content-Type") or "application/octet-stream",
            expected_etag=request.headers.get("ETag"), meta=meta)
        return Response(status=201, headers={"ETag": entry["hash"],
                                             "Last-Modified": http_date(time.time())})

    @app.route("/swift/v1/<container>/<path:obj>", methods=["GET", "HEAD"])
    def get_object(container, obj):
        xattrs, data = gateway.get_object(container, obj, g.context,
                                          with_data=request.method == "GET")
        headers = _object_headers(xattrs)
        if request.method == "HEAD":
            return Response(status=200, headers=headers)
        return Response(data, status=200, headers=headers)

    @app.route("/swift/v1/<container>/<path:obj>", methods=["DELETE"])
    def delete_object(container, obj):
        gateway.delete_object(container, obj, g.context)
        return Response(status=204)

    return app


def _listing(items: list[dict], headers: dict) -> Response:
    """A Swift listing: names one per line, or JSON with ``?format=json``."""
    if _wants_json():
        response = jsonify(items)
    elif items:
        response = Response("".join(f"{item['name']}\n" for item in items),
                            content_type="text/plain; charset=utf-8")
    else:
        response = Response(status=204)
    response.headers.update(headers)
    if request.method == "HEAD":
        response = Response(status=204, headers=headers)
    return response
