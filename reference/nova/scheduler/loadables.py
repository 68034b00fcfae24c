"""Which filters and weighers exist, and loading a learner's filters from files.

Upstream's ``nova/loadables.py`` finds plug-in classes by importing every module
of a package; ``[filter_scheduler] available_filters`` names where filters come
from (by default ``nova.scheduler.filters.all_filters``: every filter shipped
with Nova) and an operator adds a module path of their own to it. novalab's
built-in filters are found the same way, as a list; a learner's come from the
``*.py`` files of ``[filter_scheduler] filter_dirs``, imported by file path.

Importing a file runs it. Only files in directories named by the deployment's
own ``nova.conf`` are imported, and none that anyone on the machine may write
(world-writable): whoever can write the state directory owns the scheduler.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from novalab.reference.nova.scheduler import filters, weights
from novalab.reference.nova.scheduler.exception import (
    ClassNotFound,
    SchedulerConfigInvalid,
    SchedulerFilterFileInvalid,
    describe,
)

BUILT_IN = "built-in"


@dataclass(frozen=True)
class AvailableFilter:
    """A filter class the scheduler may enable, and where it comes from."""

    name: str
    cls: type
    source: str  # BUILT_IN, or the path of the learner's file


def world_writable(path: Path) -> bool:
    mode = path.stat().st_mode
    sticky_dir = stat.S_ISDIR(mode) and mode & stat.S_ISVTX
    return bool(mode & stat.S_IWOTH) and not sticky_dir


def filter_files(dirs, conf_path: str | os.PathLike = "nova.conf") -> list[Path]:
    """The ``*.py`` files of ``dirs``, sorted; not ``_private.py`` ones."""
    files: list[Path] = []
    for directory in dirs:
        if not directory.is_dir():
            raise SchedulerConfigInvalid(
                path=conf_path, reason=f"[filter_scheduler] filter_dirs: {directory} is not "
                                       "a directory")
        files += sorted(p for p in directory.glob("*.py")
                        if not p.name.startswith(("_", ".")) and p.is_file())
    return files


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    return f"novalab_filter_dirs.{path.stem}_{digest}"


def load_filter_file(path: Path) -> list[type]:
    """Import ``path`` (again) and return the BaseHostFilter subclasses it defines."""
    for checked in (path.parent, path):
        if world_writable(checked):
            raise SchedulerFilterFileInvalid(
                path=path, reason=f"{checked} is world-writable: anyone on this machine "
                                  "could run code in nova-scheduler")
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # In sys.modules while it runs, as an import would be (dataclasses look there).
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if not isinstance(exc, Exception):
            raise
        raise SchedulerFilterFileInvalid(path=path, reason=describe(exc, path)) from exc
    return [obj for obj_name, obj in vars(module).items()
            if inspect.isclass(obj) and not obj_name.startswith("_")
            and issubclass(obj, filters.BaseHostFilter) and obj.__module__ == name]


def available_filters(filter_dirs=(), conf_path="nova.conf") -> list[AvailableFilter]:
    """Built-in filters, then each learner file's, in file order; names must be unique."""
    found = [AvailableFilter(cls.__name__, cls, BUILT_IN) for cls in filters.all_filters()]
    for path in filter_files(filter_dirs, conf_path):
        for cls in load_filter_file(path):
            found.append(AvailableFilter(cls.__name__, cls, str(path)))
    seen: dict[str, AvailableFilter] = {}
    for available in found:
        if available.name in seen:
            first = seen[available.name]
            raise SchedulerFilterFileInvalid(
                path=available.source,
                reason=f"it defines {available.name}, which {first.source} also defines "
                       "(rename your class)")
        seen[available.name] = available
    return found


def weigher_classes(weight_classes) -> list[type]:
    """The weighers ``weight_classes`` names, upstream's way (``all_weighers`` or paths).

    An entry is matched by its last dotted part, so ``RAMWeigher``,
    ``nova.scheduler.weights.ram.RAMWeigher`` and novalab's own module path all
    name the same class.
    """
    known = {cls.__name__: cls for cls in weights.all_weighers()}
    classes: list[type] = []
    for entry in weight_classes:
        last = entry.rsplit(".", 1)[-1]
        if last == "all_weighers":
            classes += [cls for cls in known.values() if cls not in classes]
        elif last in known:
            if known[last] not in classes:
                classes.append(known[last])
        else:
            raise ClassNotFound(class_name=entry,
                                exception=f"novalab's weighers are {', '.join(known)} "
                                          "(or all_weighers)")
    return classes
