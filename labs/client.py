"""`novalab lab`'s side of the lab service: the learner's own keystone user asks it.

The service runs in the cloud (``novalab.labs.service``); this client logs in
with the learner's credentials, finds the service in keystone's catalog
(service type ``lab``) and sends the lab folder's artifacts with a grade. It
needs nothing of the cloud's but its keystone URL.
"""

from __future__ import annotations

import base64
from pathlib import Path

import httpx

from novalab.labs.course import Lab
from novalab.labs.service import OPERATOR_HEADER
from novalab.reference.deploy.client import ClientError, CloudClient
from novalab.tracing.http import http_client

SERVICE_TYPE = "lab"
# The service takes a grade body of up to 16 MiB; base64 makes 4 bytes of every 3.
MAX_ARTIFACT_BYTES = 11 * 1024 * 1024


class ServiceError(Exception):
    """The lab service (or keystone) refused; the message is the service's own."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _message(response: httpx.Response) -> str:
    try:
        return response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return response.text[:300] or response.reason_phrase


def artifacts(lab: Lab, user: str, folder: Path) -> dict[str, str]:
    """The files of ``folder`` the lab's checks read (its ``artifacts``), base64 by
    relative name; missing ones are simply absent (the check says what to make)."""
    names = lab.rendered_names(user)
    found: dict[str, str] = {}
    total = 0
    for pattern in lab.artifacts:
        for path in sorted(folder.glob(pattern.format(**names))):
            if not path.is_file() or path.is_symlink():
                continue
            data = path.read_bytes()
            total += len(data)
            if total > MAX_ARTIFACT_BYTES:
                raise ServiceError(413, f"the files of {folder} this lab reads are over "
                                        f"{MAX_ARTIFACT_BYTES // 2**20} MiB")
            found[path.relative_to(folder).as_posix()] = base64.b64encode(data).decode()
    return found


class LabService:
    """The learner's session with the lab service of one cloud."""

    def __init__(self, auth_url: str, user: str, password: str, project: str,
                 timeout: float = 600.0):
        self.http = http_client(timeout=timeout)
        client = CloudClient(auth_url, self.http)
        try:
            client.authenticate(user, password, project)
        except ClientError as exc:
            raise ServiceError(exc.status, f"keystone refused {user} in project {project}: "
                                           f"{exc.message}") from exc
        except httpx.HTTPError as exc:
            raise ServiceError(503, f"the cloud does not answer at {auth_url}: {exc}") from exc
        if SERVICE_TYPE not in client.catalog:
            raise ServiceError(404, "this cloud runs no lab service (no 'lab' endpoint in "
                                    "keystone's catalog): the lab cloud and `novalab serve` "
                                    "run one")
        self.url = client.catalog[SERVICE_TYPE]
        self.token = client.token

    def close(self) -> None:
        self.http.close()

    def operator_token(self, auth_url: str, admin_password: str) -> str:
        """An admin token of this cloud: what a lab that operates it starts with."""
        client = CloudClient(auth_url, self.http)
        try:
            client.authenticate("admin", admin_password, "admin")
        except ClientError as exc:
            raise ServiceError(exc.status, f"keystone refused the cloud's admin: "
                                           f"{exc.message}") from exc
        return client.token

    def _call(self, method: str, path: str, body: dict | None = None, ok=(200,),
              operator_token: str | None = None, **params) -> dict:
        """``operator_token``: an admin's, beside the learner's, for a lab that operates
        the cloud (sent as :data:`OPERATOR_HEADER`)."""
        headers = {"X-Auth-Token": self.token}
        if operator_token:
            headers[OPERATOR_HEADER] = operator_token
        try:
            response = self.http.request(method, f"{self.url}{path}", json=body,
                                         params=params or None, headers=headers)
        except httpx.HTTPError as exc:
            raise ServiceError(503, f"the lab service does not answer at {self.url}: "
                                    f"{exc}") from exc
        if response.status_code not in ok:
            raise ServiceError(response.status_code, _message(response))
        return response.json()

    def course(self) -> list[dict]:
        return self._call("GET", "/labs")["labs"]

    def attempts(self, everyone: bool = False, lab: str | None = None) -> dict:
        params = {"all": "true"} if everyone else {}
        if lab:
            params["lab"] = lab
        return self._call("GET", "/attempts", **params)

    def start(self, lab: str, workdir: Path, operator_token: str | None = None) -> dict:
        """Start (or go on with) an attempt; a lab that operates the cloud needs
        ``operator_token``, an admin's (:meth:`operator_token`)."""
        return self._call("POST", f"/labs/{lab}/attempts",
                          {"attempt": {"workdir": str(workdir.absolute())}},
                          ok=(200, 201), operator_token=operator_token)["attempt"]

    def current(self, lab: str) -> dict | None:
        try:
            return self._call("GET", f"/labs/{lab}/attempts/current")["attempt"]
        except ServiceError as exc:
            if exc.status == 404:
                return None
            raise

    def answer(self, lab: str, key: str, value: str) -> dict:
        return self._call("PUT", f"/labs/{lab}/attempts/current/answers/{key}",
                          {"answer": value})["attempt"]

    def grade(self, lab: str, files: dict[str, str], operator_token: str | None = None) -> dict:
        return self._call("POST", f"/labs/{lab}/attempts/current/grade",
                          {"files": files}, operator_token=operator_token)["grade"]

    def finish(self, lab: str) -> dict:
        return self._call("POST", f"/labs/{lab}/attempts/current/finish", {})
