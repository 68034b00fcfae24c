"""Message bodies as JSON bytes, the wire format oslo.messaging sends to RabbitMQ.

oslo.messaging JSON-encodes each message (``oslo_serialization.jsonutils``) and
lets a ``Serializer`` turn rich objects (Nova's versioned objects) into
primitives first. We keep the primitive step only: datetimes become ISO 8601
strings, UUIDs strings and sets lists, so the receiver gets plain JSON values.
"""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any


def _primitive(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:  # mixed types: any order will do
            return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable in an RPC message")


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` as compact UTF-8 JSON."""
    return json.dumps(obj, default=_primitive, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    """Decode a body written by :func:`dumps`."""
    return json.loads(data)
