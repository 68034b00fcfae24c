"""What a lab's ``grade.py`` and ``prepare.py`` are written with.

A check is a function of a :class:`Context`, marked with :func:`check`; it
passes by returning and fails by raising :class:`Fail` with the reason a
learner should read::

    from novalab.labs.grading import Fail, check

    @check("{server} is ACTIVE")
    def server_is_active(ctx):
        server = ctx.server(ctx.names["server"])
        if server["status"] != "ACTIVE":
            raise Fail(f"{server['name']} is {server['status']}")

Checks judge what really happened: the cloud's state through its APIs
(``ctx.api``, ``ctx.server``), the learner's own trace through the trace store
(``ctx.boot``, ``ctx.flow``), the learner's answers (``ctx.answers``) and the
files they wrote (``ctx.workdir``). Never the commands they typed. A check that
does not apply to the cloud the lab runs on raises :class:`Skip`, saying why.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from novalab.labs.cloud import Cloud
from novalab.labs.course import Lab
from novalab.reference.common.metadata_secret import guest_source_address, shared_secret
from novalab.reference.deploy.client import ClientError, CloudClient
from novalab.tracing import attributes as attr
from novalab.tracing.http import http_client
from novalab.tracing.model import Trace
from novalab.tracing.store import NoTrace, TraceStore


class Fail(Exception):
    """A check that did not pass; the message is what the learner reads."""


class Skip(Exception):
    """A check that does not apply to this cloud (a part of a lab only a `novalab up`
    cloud can run, say); the message says why. It does not hold the lab back."""


def check(text: str) -> Callable:
    """Mark a function of ``grade.py`` as a check; ``text`` may name the lab's names."""
    def mark(func):
        func.check_text = text
        return func
    return mark


@dataclass
class Result:
    text: str
    passed: bool
    why: str = ""
    skipped: bool = False  # passed because it does not apply here (why says so)

    def to_dict(self) -> dict:
        return {"check": self.text, "passed": self.passed, "why": self.why,
                "skipped": self.skipped}


class Api:
    """The learner's view of the cloud's APIs: GET/POST/DELETE by service type and path."""

    def __init__(self, client: CloudClient):
        self.client = client

    def request(self, method: str, service: str, path: str, **kwargs) -> httpx.Response:
        url = self.client.endpoint(service) + path
        headers = {"X-Auth-Token": self.client.token or "", "Accept": "application/json",
                   **kwargs.pop("headers", {})}
        return self.client.http.request(method, url, headers=headers, **kwargs)

    def get(self, service: str, path: str, **params) -> Any:
        response = self.request("GET", service, path, params=params or None)
        if response.status_code != 200:
            raise ClientError(response.status_code, response.text[:300])
        return response.json()


@dataclass
class Context:
    """Everything a check may look at, for one learner in one lab."""

    lab: Lab
    cloud: Cloud
    user: str
    password: str
    project: str
    workdir: Path
    answers: dict[str, str] = field(default_factory=dict)
    trace_timeout: float = 15.0
    # The learner's own token (the lab service grades with the token the learner's
    # request carried; then ``password`` is empty and never asked for).
    token: str = ""
    # What the attempt drew for this learner (names, sizes, the host to choose...);
    # nothing before it counts: ``started_at`` (seconds since the epoch), 0: all.
    parameters: dict = field(default_factory=dict)
    started_at: float = 0.0
    # The learner's keystone user id, when known (the lab service's): what cleanup
    # checks against the maker a resource records.
    user_id: str = ""
    # One grade reads each boot's trace once, however many checks look at it.
    _boots: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def learner_folder(self) -> Path:
        """The lab folder on the learner's own machine (what a lab's set-up may point the
        cloud at); ``workdir`` is the copy of its artifacts a grade reads."""
        where = self.parameters.get("workdir")
        return Path(where) if where else self.workdir

    @cached_property
    def names(self) -> dict[str, str]:
        return self.lab.rendered_names(self.user, self.parameters)

    def _client(self, user: str, password: str, project: str) -> CloudClient:
        http = http_client(timeout=30)
        client = CloudClient(self.cloud.auth_url, http)
        client.authenticate(user, password, project)
        return client

    @cached_property
    def api(self) -> Api:
        """The APIs as the learner (their keystone user and project)."""
        if not self.token:
            return Api(self._client(self.user, self.password, self.project))
        # The learner's own catalog (an endpoint may carry their project id), from
        # keystone, as a service asks about a token it was sent.
        admin = self.admin_api.client
        response = admin.http.get(f"{self.cloud.auth_url}/auth/tokens",
                                  headers={"X-Auth-Token": admin.token,
                                           "X-Subject-Token": self.token})
        if response.status_code != 200:
            raise ClientError(response.status_code, "keystone does not know the learner's "
                                                    "token any more: log in again")
        client = CloudClient(self.cloud.auth_url, http_client(timeout=30))
        client.adopt(self.token, response.json()["token"])
        return Api(client)

    @cached_property
    def admin_api(self) -> Api:
        """The APIs as the cloud's admin (hosts, services, every project's servers): only
        where the cloud's credentials are readable, i.e. inside the lab service."""
        return Api(self._client("admin", self.cloud.credentials.admin, "admin"))

    @cached_property
    def store(self) -> TraceStore:
        return TraceStore(self.cloud.state_dir)

    # Servers and their traces ---------------------------------------------------------------

    def server(self, name: str) -> dict | None:
        """The learner's server called ``name`` (details), or None."""
        servers = self.api.get("compute", "/servers/detail", name=f"^{name}$")["servers"]
        return servers[0] if servers else None

    def require_server(self, name: str, what: str = "") -> dict:
        server = self.server(name)
        if server is None:
            raise Fail(f"no server named {name}" + (f": {what}" if what else ""))
        return server

    def require_active(self, name: str, what: str = "") -> dict:
        """The learner's server ``name``, which must be ACTIVE (else its fault is the why)."""
        server = self.require_server(name, what)
        if server["status"] != "ACTIVE":
            raise Fail(f"{server['name']} is {server['status']}"
                       + (f": {server['fault']['message']}" if server.get("fault") else ""))
        return server

    def request_trace(self, request_id: str, copy_from: str) -> tuple[Trace, list]:
        """The trace of the request ``request_id`` a learner answered with, and the
        SERVER spans that answered it (any service; the caller picks). ``copy_from``
        says where the id is found, for the failure when no trace has it."""
        try:
            selection = self.store.select(request_id=request_id, timeout=self.trace_timeout)
        except NoTrace as exc:
            raise Fail(f"no trace has the request id {request_id!r}: copy it from "
                       f"{copy_from}") from exc
        trace = Trace.of(selection.spans)
        self._require_this_attempt(trace, f"the request {request_id}")
        return trace, [s for s in trace if s.kind == "SERVER"
                       and s.get(attr.OPENSTACK_REQUEST_ID) == request_id]

    def _require_this_attempt(self, trace: Trace, what: str) -> None:
        """Nothing done before this attempt started counts: a new attempt (``lab reset``,
        or ``lab start`` after ``finish``) needs the work done again."""
        if self.started_at and trace.start_ns / 1e9 < self.started_at:
            raise Fail(f"{what} was made before this attempt at the lab started: do it "
                       "again, now")

    def as_guest(self, port: dict, path: str) -> httpx.Response:
        """GET ``path`` from the metadata proxy as the guest on ``port`` would: from the
        loopback address that stands for its port (``guest_source_address``)."""
        proxy = self.cloud.urls.get("metadata-proxy")
        if not proxy:
            raise Fail("this cloud names no metadata proxy (cloud.json): start the lab again")
        source = guest_source_address(port["id"], shared_secret(self.cloud.state_dir))
        with http_client(timeout=30, local_address=source) as guest:
            return guest.get(f"{proxy.rstrip('/')}{path}")

    def require_whole_boot(self, name: str, flow: str | None = "classic"):
        """The flow check of the boot of ``name`` (on ``flow``, as :meth:`flow` reads it),
        which must match every step it implies, none out of order."""
        result = self.flow(name, flow)
        if not result.ok:
            missing = [r.step.number for r in result.results if r.missing]
            raise Fail(f"{result.summary}; missing: {missing}")
        return result

    def boot(self, name: str) -> Trace:
        """The trace of the learner's boot of server ``name``, from the trace store."""
        server = self.require_server(name)
        key = ("boot", server["id"])
        if key not in self._boots:
            try:
                selection = self.store.select(server=server["id"], timeout=self.trace_timeout)
                self._boots[key] = Trace.of(selection.spans)
                self._require_this_attempt(self._boots[key], f"the boot of {name}")
            except Fail as failure:
                self._boots[key] = failure
            except NoTrace as exc:
                self._boots[key] = Fail(f"no trace of the boot of {name} in "
                                        f"{self.cloud.state_dir}: {exc}")
        if isinstance(self._boots[key], Fail):
            raise self._boots[key]
        return self._boots[key]

    def flow(self, name: str, flow: str | None = "classic"):
        """The flow check of the boot of server ``name`` on the table ``flow``.

        ``flow`` is the table the lab's step numbers are of: classic (the 58, which
        every lab's ``steps`` number) unless a lab says otherwise; None takes the table
        the trace shows (``flows.detect``). A boot that shows another flow than the one
        named fails, saying so: on a modern cloud (``lab start --cloud running``) the
        classic step numbers would name other steps, or none.
        """
        from novalab.diagrams.check import check as flow_check
        from novalab.diagrams.flows import detect, get_flow

        trace = self.boot(name)
        shows, why = detect(trace)
        if flow is not None and shows != flow:
            where = (f" on the lab cloud (`novalab lab start {self.lab.number} --cloud lab`, "
                     "wired as classic)" if flow == "classic" else "")
            raise Fail(f"the boot of {name} shows the {shows} flow ({why}), and this lab "
                       f"grades the steps of the {flow} table: boot {name} again{where}")
        key = ("flow", trace.trace_id, shows)
        if key not in self._boots:
            self._boots[key] = flow_check(trace, get_flow(shows))
        return self._boots[key]

    def answered_span(self, key: str, trace: Trace, whose: str):
        """The span of ``trace`` whose id the learner answered to ``key``.

        A span id is what only the learner's own boot can give: another learner's
        boot, or an earlier one, has other ids. ``whose`` names the boot, for the
        failure (``the boot of lab07-ann-vm``)."""
        given = self.answer(key).lower().removeprefix("0x")
        span = trace.span(given)
        if span is None:
            raise Fail(f"{self.answer(key)!r} is not a span id of {whose} (16 hex digits, "
                       "as `novalab flow check` or `novalab trace show --attributes` print "
                       "them for your own boot)")
        return span

    def own_image(self, name: str, mib: int) -> None:
        """The learner's own raw image ``name`` of ``mib`` MiB of random bytes, which no
        compute host has cached. Idempotent: an active one is kept (the learner may have
        booted it already); one whose upload never finished is replaced."""
        images = self.api.get("image", "/v2/images", name=name)["images"]
        if any(image["status"] == "active" for image in images):
            return
        for image in images:
            self.api.request("DELETE", "image", f"/v2/images/{image['id']}")
        created = self.api.request("POST", "image", "/v2/images", json={
            "name": name, "disk_format": "raw", "container_format": "bare"})
        created.raise_for_status()
        self.api.request("PUT", "image", f"/v2/images/{created.json()['id']}/file",
                         content=os.urandom(mib << 20),
                         headers={"Content-Type": "application/octet-stream"}
                         ).raise_for_status()

    def answer_ms(self, key: str, hint: str = "") -> float:
        """The learner's answer to ``key`` as milliseconds (``12.5``, ``+12.5 ms``);
        ``hint`` is added to the failure when it is no number."""
        given = self.answer(key).lower().removeprefix("+").removesuffix("ms").strip()
        try:
            return float(given)
        except ValueError as exc:
            raise Fail(f"{given!r} is not a number of milliseconds{hint}") from exc

    def answer(self, key: str) -> str:
        if key not in self.answers:
            question = self.lab.questions.get(key, key)
            raise Fail(f"no answer to {key!r} yet ({question}): "
                       f"`novalab lab answer {self.lab.name} {key} VALUE`")
        return self.answers[key].strip()


def checks(module: ModuleType | None) -> list[Callable]:
    """The checks of a ``grade.py`` module, in the order they are written."""
    if module is None:
        return []
    found = [f for f in vars(module).values() if callable(f) and hasattr(f, "check_text")]
    return sorted(found, key=lambda f: f.__code__.co_firstlineno)


def grade(ctx: Context) -> list[Result]:
    """Run every check of the lab; one result each, never an exception."""
    results = []
    for func in checks(ctx.lab.module("grade")):
        text = func.check_text.format(**ctx.names)
        try:
            func(ctx)
        except Fail as failure:
            results.append(Result(text, False, str(failure)))
        except Skip as skip:
            results.append(Result(text, True, f"skipped: {skip}", skipped=True))
        except (ClientError, httpx.HTTPError) as exc:
            results.append(Result(text, False, f"the cloud did not answer as expected: {exc}"))
        except Exception as exc:  # a broken check must not hide the others
            where = traceback.extract_tb(exc.__traceback__)[-1]
            results.append(Result(text, False, f"the check itself failed ({exc!r} at "
                                               f"{Path(where.filename).name}:{where.lineno})"))
        else:
            results.append(Result(text, True))
    return results
