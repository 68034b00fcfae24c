"""The request context: who is asking, on whose behalf, under which request id.

Like ``nova.context.RequestContext`` it travels with every RPC message as a plain
dict (``to_dict``/``from_dict``), so the scheduler, conductor and compute host act
with the identity the API validated, and log lines share one request id.

Two ids, as in oslo.context: ``request_id`` is the one the API that took the
request generated (and answered with); ``global_request_id`` the one its caller
sent in ``X-OpenStack-Request-ID``, if any. A service calling another sends
``global_id`` (the global one, else its own), so one id follows the request.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field


def generate_request_id() -> str:
    """Return an id in the ``req-<uuid>`` form OpenStack services log and return."""
    return f"req-{uuid.uuid4()}"


@dataclass
class RequestContext:
    user_id: str | None = None
    project_id: str | None = None
    roles: list[str] = field(default_factory=list)
    auth_token: str | None = None
    user_name: str | None = None
    project_name: str | None = None
    request_id: str = field(default_factory=generate_request_id)
    global_request_id: str | None = None
    is_admin: bool = False
    read_deleted: str = "no"

    def __post_init__(self) -> None:
        if "admin" in self.roles:
            self.is_admin = True

    @property
    def global_id(self) -> str:
        """The id to send on to other services (oslo.context ``global_id``)."""
        return self.global_request_id or self.request_id

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> RequestContext:
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def elevated(self) -> RequestContext:
        """An admin copy, as services use for their own bookkeeping."""
        values = self.to_dict()
        values["is_admin"] = True
        values["roles"] = sorted(set(self.roles) | {"admin"})
        return RequestContext.from_dict(values)


def get_admin_context(request_id: str | None = None) -> RequestContext:
    """A context for work no user asked for: start-up, heartbeats, periodic tasks."""
    ctxt = RequestContext(is_admin=True, roles=["admin"])
    if request_id:
        ctxt.request_id = request_id
    return ctxt
