"""Keep trying what a short outage interrupts (a database or broker restart), bounded.

Upstream leans on oslo.db's ``wrap_db_retry`` and oslo.messaging's reconnects for
this. novalab retries only where giving up would strand a resource: recording
that a build or a volume create failed, reading the instance a build starts
from. tenacity does the waiting: back-off from 0.1 s doubling to 5 s, for at
most ``bound`` seconds, then the last error is raised as it was.
"""

from __future__ import annotations

import logging

import tenacity

LOG = logging.getLogger(__name__)

# Long enough for a database or broker to restart; short enough that a dead one
# is reported while someone still waits.
RETRY_BOUND = 120.0


def _log(state: tenacity.RetryCallState) -> None:
    LOG.warning("attempt %d failed (%s); trying again in %.1f s", state.attempt_number,
                state.outcome.exception() if state.outcome else "?",
                state.next_action.sleep if state.next_action else 0.0)


def retrying(*, terminal: tuple[type[BaseException], ...] = (),
             bound: float = RETRY_BOUND) -> tenacity.Retrying:
    """``for attempt in retrying(...): with attempt: ...`` retries any error but ``terminal``."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_not_exception_type(terminal),
        wait=tenacity.wait_exponential(multiplier=0.1, max=5.0),
        stop=tenacity.stop_after_delay(bound), reraise=True, before_sleep=_log)


def call(func, *args, terminal: tuple[type[BaseException], ...] = (),
         bound: float = RETRY_BOUND, **kwargs):
    """``func(*args, **kwargs)``, retried as :func:`retrying` says."""
    return retrying(terminal=terminal, bound=bound)(func, *args, **kwargs)
