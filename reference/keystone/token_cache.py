"""Keystone's token cache: a validated token is answered from memory until anything changes.

Upstream memoizes token validation (``[token] caching``, the ``TOKENS_REGION`` of
``keystone.token.provider``) and invalidates the region when identity changes:
a revocation, a user or project disabled or deleted, a role assignment removed.
Here every request a service forwards to ``GET /v3/auth/tokens`` validates two
tokens, the service's own (the caller) and the user's (the subject), each four
queries; the caller's is the same token every time.

Invalidation is by the database, not by call sites: any statement through
keystone's engine that writes a ``keystone_*`` table, other than a new token
row, empties the cache, so no code path that changes identity can forget to. A
writer in another process (none in novalab: keystone is one process) would be
seen within ``max_age`` seconds.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict

from sqlalchemy import event

from novalab.reference.common.db import Database

MAX_AGE = 10.0
MAX_ENTRIES = 10_000
# INSERT INTO keystone_tokens (a token issued) changes no other token's answer.
_WRITE = re.compile(r"^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+[`\"]?(\w+)", re.IGNORECASE)


class TokenCache:
    """Validated tokens' answers by token hash, dropped on any identity write."""

    def __init__(self, db: Database, max_age: float = MAX_AGE, max_entries: int = MAX_ENTRIES):
        self.max_age = max_age
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[float, object]] = OrderedDict()
        self._lock = threading.Lock()
        # Bumped by every invalidation: an answer read from the database before a
        # write must not be put back after it.
        self.generation = 0
        event.listen(db.engine, "before_cursor_execute", self._on_statement)

    def get(self, key: str):
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if time.monotonic() - found[0] > self.max_age:
                del self._entries[key]
                return None
            return found[1]

    def put(self, key: str, value, generation: int) -> None:
        """Keep ``value``, read when the cache was at ``generation``, if nothing changed since."""
        with self._lock:
            if generation != self.generation:
                return
            self._entries[key] = (time.monotonic(), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def invalidate(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def _on_statement(self, _conn, _cursor, statement: str, *_args) -> None:
        match = _WRITE.match(statement)
        if match is None:
            return
        verb, table = match.group(1).upper(), match.group(2).lower()
        if not table.startswith("keystone_") or (
                verb.startswith("INSERT") and table == "keystone_tokens"):
            return
        self.invalidate()
