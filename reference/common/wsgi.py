"""HTTP plumbing shared by the reference APIs: fault bodies, request ids, a server thread.

OpenStack APIs answer errors with a JSON *fault body* named after the status,
``{"badRequest": {"code": 400, "message": "..."}}`` in Nova's style, and tag every
response with ``X-OpenStack-Request-ID`` (oslo.middleware's ``RequestId``, see
:func:`install_request_id`). Services run on Werkzeug's threaded WSGI server, one
thread each, so the embedded cloud speaks real HTTP on loopback.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable

import sqlalchemy.exc
from flask import Flask, g, jsonify, request
from opentelemetry import trace
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge
from werkzeug.serving import make_server

from novalab.reference.common import db, exception
from novalab.reference.common.context import generate_request_id
from novalab.tracing import attributes as attr

LOG = logging.getLogger(__name__)

# oslo_middleware/request_id.py: the header every API answers with (and a caller may
# send), and the form an inbound id must have to be kept as the global request id.
REQUEST_ID_HEADER = "X-OpenStack-Request-ID"
GLOBAL_REQUEST_ID_FORMAT = re.compile(
    r"^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$")
# Nova answers with the id under its older name too (ComputeReqIdMiddleware).
COMPUTE_REQUEST_ID_HEADER = "X-Compute-Request-Id"

# oslo.middleware's sizelimit default (``[oslo_middleware] max_request_body_size``).
MAX_REQUEST_BODY_BYTES = 114688

# What every refusal of a left-out feature ends with: the gap, and where it is listed.
LEFT_OUT = "novalab does not implement it (see README.md, \"Left out, on purpose\")"

# webob's explanations, which the routers of Nova, Cinder, Glance and Keystone answer
# for a path no route matches (``webob.exc.HTTPNotFound()``) or a method the matched
# resource has no handler for (``HTTPMethodNotAllowed``).
NOT_FOUND = "The resource could not be found."
METHOD_NOT_ALLOWED = "The method %s is not allowed for this resource."

# Nova's fault names (nova/api/openstack/wsgi.py, Fault._fault_names).
FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    501: "notImplemented",
    503: "serviceUnavailable",
}


def nova_fault(code: int, message: str):
    """A Flask response carrying Nova's fault body for ``code``."""
    name = FAULT_NAMES.get(code, "computeFault")
    response = jsonify({name: {"code": code, "message": message}})
    response.status_code = code
    return response


def keystone_fault(code: int, message: str, title: str | None = None):
    """Keystone's (and keystonemiddleware's) error body."""
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              405: "Method Not Allowed", 409: "Conflict", 413: "Request Entity Too Large",
              415: "Unsupported Media Type", 501: "Not Implemented",
              503: "Service Unavailable"}
    response = jsonify({"error": {"code": code, "message": message,
                                  "title": title or titles.get(code, "Internal Server Error")}})
    response.status_code = code
    return response


def install_request_id(app: Flask, headers: tuple[str, ...] = (REQUEST_ID_HEADER,),
                       new_request_id: Callable[[], str] = generate_request_id) -> None:
    """Give each request its own id, as oslo.middleware's ``RequestId`` does.

    Before the request: a new id in ``g.request_id`` (the service's own, whatever
    the caller sent), recorded as ``openstack.request_id`` on the HTTP SERVER span
    the Flask instrumentation opened (install this after ``instrument_flask``).
    A caller's ``X-OpenStack-Request-ID`` of the ``req-<uuid>`` form is kept as
    ``g.global_request_id`` (``openstack.global_request_id``): one id across the
    services a request reaches. After it: the id in each of ``headers``.
    """

    @app.before_request
    def _assign_request_id():
        g.request_id = new_request_id()
        inbound = request.headers.get(REQUEST_ID_HEADER, "")
        g.global_request_id = inbound if GLOBAL_REQUEST_ID_FORMAT.match(inbound) else None
        span = trace.get_current_span()
        span.set_attribute(attr.OPENSTACK_REQUEST_ID, g.request_id)
        if g.global_request_id:
            span.set_attribute(attr.OPENSTACK_GLOBAL_REQUEST_ID, g.global_request_id)

    @app.after_request
    def _tag_response(response):
        request_id = g.get("request_id")
        for header in headers:
            if request_id and header not in response.headers:
                response.headers[header] = request_id
        return response


def install_body_size_limit(app: Flask, max_bytes: int = MAX_REQUEST_BODY_BYTES) -> None:
    """Refuse JSON bodies over ``max_bytes`` with a 413, before anything reads them.

    oslo.middleware's ``RequestBodySizeLimiter`` does this for every OpenStack API
    (``max_request_body_size``). Only JSON bodies are limited here: image data and
    object uploads (``application/octet-stream``) are bounded by their own quotas.
    """

    @app.before_request
    def _limit_json_body():
        if "json" not in (request.mimetype or ""):
            return
        view = app.view_functions.get(request.endpoint)
        if getattr(view, "raw_body_reason", None):
            return  # object data that happens to be JSON: bounded by its own limits
        if request.content_length is not None and request.content_length > max_bytes:
            raise RequestEntityTooLarge(
                f"Request is too large: {request.content_length} bytes, the limit is "
                f"{max_bytes}.")
        # A chunked body has no length: cap what Werkzeug will read of it.
        request.max_content_length = max_bytes


def routing_message(exc: HTTPException, left_out: tuple[tuple[str, str], ...] = ()) -> str | None:
    """What a router says when no route takes the request, or None for any other error.

    Flask's own text ("The requested URL was not found on the server") reads as if
    the server were missing; OpenStack's routers answer webob's explanation in the
    service's fault body. A path that is a real OpenStack resource novalab leaves out
    (``left_out``: ``(regex on the path, what it is)``) says so and where it is listed.
    """
    if request.url_rule is not None and not isinstance(exc, MethodNotAllowed):
        return None  # raised by a handler: its own message
    if isinstance(exc, MethodNotAllowed):
        base = METHOD_NOT_ALLOWED % request.method
    elif isinstance(exc, NotFound):
        base = NOT_FOUND
    else:
        return None
    # A resource novalab serves only in part (GET /os-aggregates, say) names the gap
    # for the methods and paths it leaves out, too.
    for pattern, what in left_out:
        if re.search(pattern, request.path):
            return f"{base} {what}: {LEFT_OUT}."
    return base


def install_common_handlers(app: Flask, fault=nova_fault,
                            request_id_headers: tuple[str, ...] = (REQUEST_ID_HEADER,),
                            new_request_id: Callable[[], str] = generate_request_id,
                            max_body_bytes: int = MAX_REQUEST_BODY_BYTES,
                            left_out: tuple[tuple[str, str], ...] = ()) -> None:
    """Request ids on every response, JSON bodies bounded, every error rendered as
    ``fault(code, message)``; an unknown path or method answered as the service's
    router does (:func:`routing_message`), naming ``left_out`` resources as such."""
    install_request_id(app, request_id_headers, new_request_id)
    install_body_size_limit(app, max_body_bytes)

    @app.errorhandler(exception.NovaLabException)
    def _novalab_error(exc):
        if exc.code >= 500:
            LOG.exception("%s %s failed", request.method, request.path)
        return fault(exc.code, exc.format_message())

    @app.errorhandler(HTTPException)
    def _http_error(exc):
        message = routing_message(exc, left_out)
        response = fault(exc.code or 500, message or exc.description or exc.name)
        if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response

    @app.errorhandler(Exception)
    def _unexpected(exc):
        LOG.exception("Unexpected error in %s %s", request.method, request.path)
        return fault(500, "Unexpected API Error. Please report this at the novalab issue "
                          f"tracker and attach the logs if possible.\n{type(exc).__name__}")

    @app.errorhandler(sqlalchemy.exc.OperationalError)
    def _database_error(exc):
        # A full disk is the storage's state, not the service's bug: a 503 that ends
        # when space is freed (issue 21: it was every API's 500, tokens included).
        if not db.is_storage_full(exc):
            return _unexpected(exc)
        LOG.error("%s %s: the database cannot grow: %s", request.method, request.path, exc)
        return fault(503, exception.DatabaseFull().format_message())


def json_body() -> dict:
    """The request's JSON object, or a 400 ``badRequest`` saying why not."""
    if not request.data:
        raise exception.Invalid("The request body is empty: a JSON object is required.")
    try:
        body = request.get_json(force=True, silent=False)
    except Exception as exc:
        raise exception.Invalid(f"Malformed request body: {exc.__class__.__name__}") from exc
    if not isinstance(body, dict):
        raise exception.Invalid("Malformed request body: a JSON object is required.")
    _require_utf8(body)
    return body


def _require_utf8(body) -> None:
    """Refuse lone surrogates (``"\\ud800"``): valid JSON, but no UTF-8 text has them,
    so no database or log could store them."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise exception.Invalid("Malformed request body: a string is not valid Unicode "
                                "(a lone surrogate).") from exc


class ServerThread:
    """Serve a WSGI app on ``host:port`` (0 picks a free port) in a daemon thread."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, name: str = "wsgi"):
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        try:
            self._server = make_server(host, port, app, threaded=True)
        except OSError as exc:
            raise OSError(f"{name}: cannot listen on {host}:{port}: {exc.strerror}. "
                          "Is another service using that port?") from exc
        except SystemExit as exc:
            # Werkzeug prints its own hint and exits when the address is taken; a
            # service must instead say which of its ports failed and let the caller decide.
            raise OSError(f"{name}: cannot listen on {host}:{port}: address in use. "
                          "Is another service using that port?") from exc
        self._server.daemon_threads = True
        self.host = host
        self.port = self._server.server_port
        self.name = name
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2},
                                        name=f"{name}-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServerThread:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def stop_all(servers: list[ServerThread]) -> None:
    """Stop ``servers`` side by side: each ``shutdown()`` waits for its loop's next
    poll (up to 0.2 s), so one after another a cloud's dozen took over a second."""
    threads = [threading.Thread(target=server.stop, name=f"{server.name}-stop")
               for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
