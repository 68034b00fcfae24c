"""What goes wrong in the scheduler's configuration and filters, as the fault says it.

Upstream keeps these in ``nova/exception.py`` beside every other Nova error. They
live here because only the scheduler raises them and they never cross RPC (the
scheduler's work arrives by cast; the fault on the instance is how the user
learns of them). Where upstream has the error its name and message are kept
(``SchedulerHostFilterNotFound``, ``ClassNotFound``); the others are novalab's,
for what upstream only meets at start-up or lets escape unnamed: a learner's
filter file that does not load, or a filter that raises.

Each message names the filter (or file) first: a fault's message is cut at 255
characters, as in Nova's ``instance_faults`` table.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from novalab.reference.common.exception import NotFound, NovaLabException


class SchedulerHostFilterNotFound(NotFound):
    """An ``enabled_filters`` name that no available filter has (upstream's message)."""

    msg_fmt = "Scheduler Host Filter %(filter_name)s could not be found."


class ClassNotFound(NotFound):
    """A ``weight_classes`` entry that names no weigher (upstream's message)."""

    msg_fmt = "Class %(class_name)s could not be found: %(exception)s"


class SchedulerHostFilterFailed(NovaLabException):
    """A filter raised: while being created, or in ``host_passes`` / ``filter_all``."""

    msg_fmt = "Scheduler Host Filter %(filter_name)s failed: %(reason)s"


class SchedulerFilterFileInvalid(NovaLabException):
    """A ``*.py`` file of ``filter_dirs`` did not load (syntax error, failed import, ...)."""

    msg_fmt = "Scheduler Host Filter file %(path)s could not be loaded: %(reason)s"


class SchedulerConfigInvalid(NovaLabException):
    """``nova.conf`` cannot be read, or a value in ``[filter_scheduler]`` is not valid."""

    msg_fmt = "Invalid scheduler configuration in %(path)s: %(reason)s"


def describe(exc: BaseException, path: str | os.PathLike | None = None) -> str:
    """``Type: message (file.py, line N)``, at the innermost frame in ``path`` (or at all).

    One line, for a fault: the log has the whole traceback.
    """
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    if isinstance(exc, SyntaxError):
        return text  # its message already says file and line
    frames = traceback.extract_tb(exc.__traceback__)
    if path is not None:
        wanted = Path(path).resolve()
        frames = [f for f in frames if Path(f.filename).resolve() == wanted] or frames
    if frames:
        text += f" ({Path(frames[-1].filename).name}, line {frames[-1].lineno})"
    return text
