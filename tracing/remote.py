"""The trace store of a cloud whose files are not yours: its trace page's API, with your token.

A learner on another machine account or laptop cannot read the cloud's state
dir (0700). The trace page the cloud runs (`serve`, `up`) serves the same
store, scoped by keystone: a trace is shown to whoever may see every server in
it, with what identifies a guest hidden from non-admins. The `trace`, `flow`
and `diagram` commands read it through here when the store is not theirs to
read: the page is in keystone's catalog (service type ``trace``), found with
the ``OS_*`` variables the learner already uses for the openstack CLI.
"""

from __future__ import annotations

import os
import time
from dataclasses import fields

import httpx

from novalab.tracing.collect import incomplete
from novalab.tracing.otlp_json import spans_from_otlp
from novalab.tracing.store import NoTrace, Row, Selection

SERVICE_TYPE = "trace"
ENV = ("OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD")


def _row(data: dict) -> Row:
    known = {f.name for f in fields(Row)}
    values = {k: v for k, v in data.items() if k in known}
    return Row(id=data["trace_id"], start_ns=data["start_unix_nano"],
               end_ns=data["end_unix_nano"],
               servers={s["id"]: s["name"] for s in data.get("servers", [])},
               **{k: v for k, v in values.items() if k not in ("id", "start_ns", "end_ns",
                                                                 "servers")})


class RemoteTraces:
    """The page's traces, as a :class:`~novalab.tracing.store.TraceStore` offers them to
    the commands: rows, and a whole trace selected by server, request id or trace id."""

    def __init__(self, page_url: str, token: str, http: httpx.Client | None = None):
        self.url = page_url.rstrip("/")
        self.http = http or httpx.Client(timeout=30)
        self.headers = {"X-Auth-Token": token}
        self.state_dir = self.url  # what the commands print as where the traces are

    @classmethod
    def from_environment(cls) -> RemoteTraces | None:
        """The page of the cloud of ``OS_*`` (the learner's own credentials), or None when
        those are not set or the cloud names no trace page."""
        if not all(os.environ.get(name) for name in ENV):
            return None
        from novalab.reference.deploy.client import ClientError, CloudClient

        http = httpx.Client(timeout=30)
        client = CloudClient(os.environ["OS_AUTH_URL"], http)
        try:
            client.authenticate(os.environ["OS_USERNAME"], os.environ["OS_PASSWORD"],
                                os.environ.get("OS_PROJECT_NAME") or os.environ["OS_USERNAME"])
        except (ClientError, httpx.HTTPError) as exc:
            raise NoTrace(f"keystone at {os.environ['OS_AUTH_URL']} refused the OS_* "
                          f"credentials: {exc}") from exc
        if SERVICE_TYPE not in client.catalog:
            return None
        return cls(client.catalog[SERVICE_TYPE], client.token, http)

    def _get(self, path: str, **params) -> httpx.Response:
        response = self.http.get(f"{self.url}{path}", params=params or None,
                                 headers=self.headers, follow_redirects=False)
        if response.status_code == 404:
            raise NoTrace(_message(response) or f"the trace page has no {path}")
        if response.status_code >= 400:
            raise NoTrace(f"the trace page answered {response.status_code} to {path}: "
                          f"{_message(response)}")
        return response

    def exists(self) -> bool:
        return True

    def refresh(self) -> RemoteTraces:
        return self

    def rows(self, everything: bool = False) -> list[Row]:
        data = self._get("/api/traces", **({"everything": "1"} if everything else {})).json()
        # The page runs each boot's flow check itself: kept for `trace list`'s steps.
        self.steps = {row["trace_id"]: (row.get("steps") or "?", row.get("flow") or "")
                      for row in data["rows"]}
        return [_row(row) for row in data["rows"]]

    def _trace_id(self, *, server=None, request_id=None, trace_id=None, latest=False) -> str:
        """The trace the words name among the rows the page shows you, newest first."""
        if trace_id:
            return trace_id
        rows = self.rows(everything=bool(request_id))
        if server:
            rows = [r for r in rows if server in r.servers or server in r.servers.values()]
            what = f"a boot of a server {server!r}"
        elif request_id:
            rows = [r for r in rows if request_id in r.request_ids]
            what = f"a request {request_id!r}"
        else:
            what = "a trace"
        if not rows:
            raise NoTrace(f"the trace page shows you no trace of {what}: only traces whose "
                          "every server is yours are shown")
        return rows[0].id

    def select(self, *, timeout: float = 10.0, settle: float = 0.5, **words) -> Selection:
        """The whole trace ``words`` name, waiting (bounded) while it is still arriving."""
        deadline = time.monotonic() + timeout
        previous = -1
        while True:
            try:
                ref = self._trace_id(**words)
                spans = spans_from_otlp(self._get(f"/api/trace/{ref}/otlp.json").json())
            except NoTrace:
                if time.monotonic() > deadline:
                    raise
                time.sleep(settle)
                continue
            whole = not incomplete(spans)
            if (whole and len(spans) == previous) or time.monotonic() > deadline:
                row = next((r for r in self.rows(everything=True) if r.id == ref), None)
                return Selection(row, spans, "")
            previous = len(spans)
            time.sleep(settle)


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict):
        error = body.get("error")
        return error.get("message", "") if isinstance(error, dict) else str(error or "")
    return ""
