"""``novalab web``: the trace page, a small local web app over one trace store.

    novalab web [--state-dir DIR] [--host 127.0.0.1] [--port 8700] [--require-auth]

``novalab serve`` and ``novalab up`` host it too, on http://127.0.0.1:8700.
Everything the page needs is served by the app itself (``web_static/``: two
HTML pages, one stylesheet, a few hundred lines of plain JavaScript); it asks
for nothing from the network, so it works on a laptop on a train.

Pages::

    /                         the traces as they arrive, newest first (boots first-class)
    /trace/<trace id>         one trace: sequence, flow check, timeline, call graph, downloads
                              (on the flow table the trace shows: classic, modern, shelve)
    /live                     the newest boot, followed as it happens
    /server/<id or name>      redirects to the newest boot of that server
    /request/<request id>     redirects to the trace of that OpenStack request id
    /class                    the teacher's view of a class (admins, on a page with a login):
                              each learner's labs, attempts and last grade

JSON, for the pages' scripts and for anyone's ``curl``::

    /api/traces[?everything=1]            the rows of `novalab trace list`
    /api/trace/<id|latest>[?known=V]      one trace: spans, its flow, flow check, sequence SVG
                                          ({"unchanged": true} while its version is V)
    /api/trace/<id>/callgraph.svg         the call graph (503 when graphviz' dot is missing)
    /api/trace/<id>/otlp.json | jaeger.json | sequence.svg|html|mmd|puml   downloads
    /api/class                            the lab service's GET /v1/class, asked with the
                                          viewer's token (the service decides who may)

``novalab web`` on loopback (the default) asks nothing: a store its user owns,
shown to that user. Bound to any other address, started by ``serve`` or ``up``
(a shared cloud: every local user reaches loopback; ``--no-web-auth`` for a
machine of one user), or with ``--require-auth``, it asks for a keystone token
and shows each project
only the traces of its own servers (``web_auth.py``), without what identifies a
guest to the metadata service (``tracing/redact.py``); admins see every trace whole::

    /login                    a form that logs in to the deployment's keystone (a cookie)

The pages poll: the list every second, the trace page too, re-running the flow
check whenever new spans arrived, which is how a boot's steps appear while it
runs. No websockets: a poll that finds nothing new costs one small answer.
"""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path

import httpx
from flask import Flask, Response, g, jsonify, redirect, request, send_from_directory
from werkzeug.exceptions import HTTPException

from novalab.diagrams import web_auth, web_data
from novalab.diagrams.web_data import LATEST, LiveStore
from novalab.tracing import redact
from novalab.tracing.store import NoTrace

STATIC = Path(__file__).with_name("web_static")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
ROW_ID = re.compile(r"^[0-9a-fA-F]{32}$")  # a trace id, or a stitched boot's id
# /api/trace/<id>/<download>: (media type, what makes it)
SEQUENCE_FILES = {"sequence.svg": ("image/svg+xml", "svg"), "sequence.html": ("text/html", "html"),
                  "sequence.mmd": ("text/plain", "mermaid"),
                  "sequence.puml": ("text/plain", "plantuml")}


class NotFound(Exception):
    """A trace, server or request id the store does not hold: a 404 that says so."""


def _row_id(text: str) -> str:
    if text == LATEST:
        return text
    if not ROW_ID.match(text):
        raise NotFound(f"{text[:80]!r} is not a trace id (32 hex digits, as `novalab trace "
                       "list` shows them)")
    return text.lower()


def _error_page(code: int, message: str) -> Response:
    """A page (or, under /api/, JSON) that says what went wrong, never a stack trace."""
    if request.path.startswith("/api/"):
        response = jsonify({"error": message, "status": code})
    else:
        from xml.sax.saxutils import escape

        response = Response(
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<title>{code}: novalab</title><link rel="stylesheet" href="/static/page.css">'
            f'</head><body><header><h1><a href="/">novalab traces</a></h1></header>'
            f'<main class="message"><h2>{code}</h2><p id="error">{escape(message)}</p>'
            '<p><a href="/">All traces</a></p></main></body></html>', mimetype="text/html")
    response.status_code = code
    return response


def create_app(state_dir: str | Path, gate: web_auth.KeystoneGate | None = None) -> Flask:
    """The trace page over the trace store in ``state_dir`` (``STATE_DIR/traces/``).

    With a ``gate``, every page and answer needs a keystone token, and shows only
    the traces that token may see.
    """
    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")
    app.json.sort_keys = False
    live = LiveStore(state_dir)
    app.extensions["novalab_store"] = live

    def _visible(row) -> bool:
        if gate is None:
            return True
        servers = row.servers if hasattr(row, "servers") else {}
        return gate.may_see(g.viewer, list(servers))

    def _hidden(ref: str) -> NotFound:
        """The one 404 of a page with a gate, naming only what the asker gave: the
        same for a trace the store does not hold and for one this viewer may not
        see, so the answer tells another project's traces from none."""
        return NotFound(f"no trace of {ref[:80]!r} here that you may see")

    def _shown(row, ref: str):
        """``row``, or the same 404 as for a trace the store does not hold."""
        if row is not None and not _visible(row):
            raise _hidden(ref)
        return row

    def _find(ref: str, **words):
        """The row ``words`` name, if this viewer may see it (``LiveStore.find``)."""
        try:
            row = live.find(**words)
        except NoTrace:
            if gate is None:
                raise
            raise _hidden(ref) from None
        return _shown(row, ref)

    def _latest():
        """The newest boot this viewer may see (the page's ``latest``)."""
        for row in live.rows():
            if row["kind"] == "boot" and gate.may_see(g.viewer, [s["id"] for s in
                                                                  row["servers"]]):
                return row["trace_id"]
        return None

    if gate is not None:
        @app.before_request
        def _authenticate():
            if request.path.startswith("/static/") or request.path in ("/login",
                                                                       "/favicon.ico"):
                return None
            token = request.headers.get("X-Auth-Token") or request.cookies.get(
                web_auth.COOKIE)
            try:
                g.viewer = gate.validate(token)
            except web_auth.AuthFailed as exc:
                if request.path.startswith("/api/"):
                    return _error_page(401, f"{exc} Send a keystone token in X-Auth-Token, "
                                            "or log in at /login.")
                return redirect(f"/login?next={request.full_path.rstrip('?')}")
            return None

        @app.get("/login")
        def login_page():
            return send_from_directory(STATIC, "login.html")

        @app.post("/login")
        def login():
            form = request.form
            try:
                token = gate.login(form.get("username", ""), form.get("password", ""),
                                   form.get("project", "") or form.get("username", ""))
            except web_auth.AuthFailed as exc:
                return _error_page(401, str(exc))
            response = redirect(web_auth.same_site(request.args.get("next")), code=303)
            response.set_cookie(web_auth.COOKIE, token, httponly=True, samesite="Strict")
            return response

    @app.errorhandler(NotFound)
    @app.errorhandler(NoTrace)
    def _not_found(exc):
        return _error_page(404, str(exc))

    @app.errorhandler(HTTPException)
    def _http_error(exc):
        return _error_page(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(Exception)
    def _unexpected(exc):
        app.logger.exception("%s %s failed", request.method, request.path)
        return _error_page(500, f"novalab web failed on this request ({type(exc).__name__}: "
                                f"{exc}); the terminal running it shows the details.")

    # Pages -------------------------------------------------------------------------------

    @app.get("/")
    def index():
        return send_from_directory(STATIC, "index.html")

    @app.get("/trace/<path:ref>")
    def trace_page(ref):
        if ref == LATEST:
            return redirect("/live")
        _find(ref, trace_id=_row_id(ref))  # a 404 page for a trace not held or shown
        return send_from_directory(STATIC, "trace.html")

    @app.get("/live")
    def live_page():
        return send_from_directory(STATIC, "trace.html")

    @app.get("/server/<path:server>")
    def by_server(server):
        return redirect(f"/trace/{_find(server, server=server).id}")

    @app.get("/request/<path:request_id>")
    def by_request(request_id):
        return redirect(f"/trace/{_find(request_id, request_id=request_id).id}")

    @app.get("/class")
    def class_page():
        _require_gate()
        return send_from_directory(STATIC, "class.html")

    @app.get("/favicon.ico")
    def favicon():
        return send_from_directory(STATIC, "favicon.svg", mimetype="image/svg+xml")

    # JSON --------------------------------------------------------------------------------

    @app.get("/api/traces")
    def api_traces():
        everything = request.args.get("everything", "") not in ("", "0", "false")
        return jsonify({"state_dir": str(live.state_dir.absolute()),
                        "traces_dir": str(live.store.traces_dir.absolute()),
                        "exists": live.store.exists(),
                        "rows": [row for row in live.rows(everything) if gate is None
                                 or gate.may_see(g.viewer, [s["id"] for s in row["servers"]])]})

    def _require_gate() -> None:
        if gate is None:
            raise NotFound("the class page needs a login, which this page does not ask "
                           "for: `novalab serve` and `up` start it with one (or `novalab "
                           "web --require-auth`)")

    @app.get("/api/class")
    def api_class():
        """Where the class stands, from the lab service: the viewer's token asks, so
        the service's own rule (admins only) decides; this page adds no power."""
        _require_gate()
        if not g.viewer.lab_url:
            return _error_page(404, "this cloud runs no lab service (no 'lab' endpoint in "
                                    "your token's catalog)")
        try:
            answer = gate.http.get(f"{g.viewer.lab_url}/class",
                                   headers={"X-Auth-Token": g.viewer.token})
        except httpx.HTTPError as exc:
            return _error_page(503, f"the lab service does not answer at "
                                    f"{g.viewer.lab_url}: {exc}")
        if answer.status_code != 200:
            try:
                message = answer.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = answer.text[:300]
            return _error_page(answer.status_code, message)
        return jsonify(answer.json())

    @app.get("/api/trace/<ref>")
    def api_trace(ref):
        row, spans = _load(ref)
        if row is None:
            return jsonify(web_data.waiting_view(live.state_dir))
        if request.args.get("known") == web_data.version(row):
            return jsonify({"version": web_data.version(row), "unchanged": True})
        return jsonify(web_data.trace_view(row, spans))

    @app.get("/api/trace/<ref>/callgraph.svg")
    def api_callgraph(ref):
        row, spans = _existing(ref)
        try:
            svg = live.callgraph_svg(row, spans)
        except Exception as exc:  # graphviz' ExecutableNotFound: no `dot` on this machine
            if type(exc).__name__ != "ExecutableNotFound":
                raise
            return _error_page(503, "The call graph needs Graphviz's `dot` program, which is "
                                    "not installed here (Debian: apt-get install graphviz).")
        return Response(svg, mimetype="image/svg+xml")

    @app.get("/api/trace/<ref>/otlp.json")
    def api_otlp(ref):
        from novalab.tracing.otlp_json import spans_to_otlp

        row, spans = _existing(ref)
        return _download(json.dumps(spans_to_otlp(spans), indent=1), "application/json",
                         f"trace-{row.id}.otlp.json")

    @app.get("/api/trace/<ref>/jaeger.json")
    def api_jaeger(ref):
        from novalab.diagrams import jaeger
        from novalab.diagrams.model import Trace

        row, spans = _existing(ref)
        return _download(jaeger.dumps(jaeger.to_jaeger(Trace.of(spans))), "application/json",
                         f"trace-{row.id}.jaeger.json")

    @app.get("/api/trace/<ref>/<name>")
    def api_sequence(ref, name):
        if name not in SEQUENCE_FILES:
            raise NotFound(f"no download {name!r}; there are callgraph.svg, otlp.json, "
                           f"jaeger.json and {', '.join(SEQUENCE_FILES)}")
        from novalab.diagrams import sequence
        from novalab.diagrams.check import check
        from novalab.diagrams.flows import detect_flow, get_flow
        from novalab.diagrams.model import Trace

        row, spans = _existing(ref)
        mimetype, fmt = SEQUENCE_FILES[name]
        trace = Trace.of(spans)  # drawn on the table it shows, as the page draws it
        model = sequence.from_check(check(trace, get_flow(detect_flow(trace))))
        return _download(sequence.render(model, fmt), mimetype, f"trace-{row.id}.{name}")

    def _load(ref):
        asked, ref = ref, _row_id(ref)
        if gate is not None and ref == LATEST:
            ref = _latest()
            if ref is None:
                return None, []
        try:
            row, spans = live.load(ref)
        except NoTrace:
            if gate is None:
                raise
            raise _hidden(asked) from None
        if gate is not None and not g.viewer.is_admin:
            spans = redact.redacted(spans)  # no guest's address (finding 10 of issue 21)
        return _shown(row, asked), spans

    def _existing(ref):
        row, spans = _load(ref)
        if row is None:
            raise NotFound(f"no boot in {live.state_dir} yet")
        return row, spans

    return app


def _download(body: str, mimetype: str, filename: str) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# -- running it ---------------------------------------------------------------------------------

def gate_for(state_dir: str | Path, host: str, require_auth: bool = False,
             auth_url: str | None = None) -> web_auth.KeystoneGate | None:
    """The keystone gate a page on ``host`` needs: none on loopback unless asked for.

    Raises OSError when a gate is needed and no keystone is known.
    """
    if not require_auth and web_auth.is_loopback(host):
        return None
    url = auth_url or web_auth.identity_url(state_dir)
    if not url:
        raise OSError(f"novalab web: serving {host} asks for a keystone token, and no "
                      f"deployment runs in {state_dir} to ask: give --auth-url")
    return web_auth.KeystoneGate(url)


def start(state_dir: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          require_auth: bool = False, auth_url: str | None = None):
    """The page served from a daemon thread (``ServerThread``); ``.url``, ``.stop()``.

    Off loopback (or with ``require_auth``) the page asks for a keystone token.
    Raises OSError with a clear message when the port is taken.
    """
    import socket

    from novalab.reference.common.wsgi import ServerThread

    gate = gate_for(state_dir, host, require_auth, auth_url)
    busy = f"novalab web: cannot listen on {host}:{port}"
    if port:  # werkzeug would print its own message and exit: ask first
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise OSError(f"{busy}: {exc.strerror} (another novalab page?)") from exc
    try:
        return ServerThread(create_app(state_dir, gate), host, port,
                            name="novalab web").start()
    except SystemExit as exc:  # lost the race for the port after all
        raise OSError(f"{busy}: the port is in use") from exc


def page_url(server, path: str = "/") -> str:
    return f"http://{server.host}:{server.port}{path}"


def serve(state_dir: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          on_ready=None, require_auth: bool = False, auth_url: str | None = None) -> None:
    """Serve the page until SIGINT or SIGTERM (what ``novalab web`` runs).

    Raises OSError, before anything else changes, when the port is taken.
    """
    server = start(state_dir, host, port, require_auth, auth_url)
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            # Set from another thread: Event.set inside the handler could deadlock
            # with the main thread's Event.wait (see processes._stop_on_signals).
            previous[signum] = signal.signal(
                signum, lambda *_: threading.Thread(target=stop.set).start())
    try:
        if on_ready:
            on_ready(server)
        stop.wait()
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
