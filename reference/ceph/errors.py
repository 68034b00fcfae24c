"""Errors that cross the wire by errno name, as Ceph's replies carry a negative errno.

A daemon raises one of these; ``msgr`` sends back its ``code`` (``"ENOENT"``) and
message; the client side rebuilds the same class with :func:`from_code`, so a
caller of librados catches ``ObjectNotFound`` whichever daemon said so. The names
follow the python ``rados`` binding (``rados.ObjectNotFound``, ``rados.ObjectExists``).
"""

from __future__ import annotations


class Error(Exception):
    """Base: ``code`` is the errno name the daemon answered with."""

    code = "EIO"

    def __init__(self, message: str = "", code: str | None = None):
        super().__init__(message or self.__class__.__name__)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)


class ObjectNotFound(Error):
    code = "ENOENT"


class ObjectExists(Error):
    code = "EEXIST"


class InvalidArgumentError(Error):
    code = "EINVAL"


class NameTooLong(InvalidArgumentError):
    code = "ENAMETOOLONG"


class NotSupported(Error):
    code = "EOPNOTSUPP"


class StaleMap(Error):
    """The OSD is not the primary for the object's PG in its (newer) map: refresh and resend.

    Real OSDs silently drop such ops and the client resends when the new map
    reaches it; answering ``ESTALE`` makes the same retry visible in the trace.
    """

    code = "ESTALE"


class ConnectionFailed(Error):
    """The peer could not be reached, or dropped the connection mid-request."""

    code = "ENOTCONN"


class TimedOut(Error):
    code = "ETIMEDOUT"


class PermissionDenied(Error):
    """The daemon refused this client's cephx proof (``rados.PermissionDeniedError``)."""

    code = "EACCES"


class NoSpace(Error):
    """An OSD is full (past its full ratio, ``mon_osd_full_ratio``): writes are refused,
    removals and reads are not (``rados.NoSpace``)."""

    code = "ENOSPC"


class NoUpOSD(Error):
    """No OSD of the PG's set is up: a real client would wait for a new map."""

    code = "EAGAIN"


_BY_CODE = {cls.code: cls for cls in (ObjectNotFound, ObjectExists, InvalidArgumentError,
                                      NameTooLong, NotSupported, StaleMap, ConnectionFailed,
                                      TimedOut, PermissionDenied, NoSpace, NoUpOSD)}


def from_code(code: str, message: str) -> Error:
    """The exception for an error reply (``Error`` with that code if none is specific)."""
    cls = _BY_CODE.get(code)
    return cls(message) if cls is not None else Error(message, code=code)
