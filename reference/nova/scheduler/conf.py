"""The ``[filter_scheduler]`` options of ``STATE_DIR/nova.conf`` (``nova/conf/scheduler.py``).

Every novalab deployment has a state directory; its ``nova.conf`` is an INI file
read as oslo.config reads one: options of a ``ListOpt`` are separated by commas,
an option given twice keeps its last value, options nova-scheduler does not know
are ignored (and reported by ``novalab scheduler filters``, since a typo there is
a silent mistake). A missing file means every default.

    [filter_scheduler]
    enabled_filters = RamFilter, DiskFilter, ComputeFilter, ImagePropertiesFilter
    weight_classes = nova.scheduler.weights.all_weighers
    ram_weight_multiplier = 1.0
    filter_dirs = filters

``filter_dirs`` is novalab's own: directories (relative to the file's directory)
whose ``*.py`` modules define more filters, the stand-in for adding a module path
to upstream's ``available_filters``. Python in them runs inside nova-scheduler.

Real Nova reads nova.conf once, at start. novalab's scheduler looks at the file's
``stat`` before every request and reads it again when it changed, so a learner
edits it without restarting an embedded cloud (``docs/decisions.md``).
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field
from pathlib import Path

from novalab.reference.nova.scheduler.exception import SchedulerConfigInvalid

CONF_NAME = "nova.conf"
GROUP = "filter_scheduler"

# Upstream's default of Ocata (the last release whose scheduler filtered RAM and disk
# itself, before placement), less the filters novalab does not have (RetryFilter,
# AvailabilityZoneFilter, ComputeCapabilitiesFilter, the server-group filters).
# CoreFilter exists but, as upstream, is not enabled by default.
DEFAULT_ENABLED_FILTERS = ("RamFilter", "DiskFilter", "ComputeFilter", "ImagePropertiesFilter")
DEFAULT_WEIGHT_CLASSES = ("nova.scheduler.weights.all_weighers",)
DEFAULT_RAM_WEIGHT_MULTIPLIER = 1.0

KNOWN_OPTIONS = ("enabled_filters", "weight_classes", "ram_weight_multiplier", "filter_dirs")


@dataclass(frozen=True)
class FilterSchedulerConf:
    """The values nova-scheduler uses, with where they came from."""

    path: Path
    exists: bool = False
    enabled_filters: tuple[str, ...] = DEFAULT_ENABLED_FILTERS
    weight_classes: tuple[str, ...] = DEFAULT_WEIGHT_CLASSES
    ram_weight_multiplier: float = DEFAULT_RAM_WEIGHT_MULTIPLIER
    filter_dirs: tuple[Path, ...] = ()
    unknown_options: tuple[str, ...] = field(default=())


def conf_path(state_dir: str | os.PathLike) -> Path:
    return Path(state_dir) / CONF_NAME


def _list(value: str) -> tuple[str, ...]:
    """A ListOpt: comma separated, blanks dropped (a newline separates too)."""
    return tuple(item.strip() for item in value.replace("\n", ",").split(",") if item.strip())


def parse(path: str | os.PathLike) -> FilterSchedulerConf:
    """Read ``[filter_scheduler]`` from ``path``; defaults for what it does not set."""
    path = Path(path)
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        with open(path, encoding="utf-8") as handle:
            parser.read_file(handle)
    except FileNotFoundError:
        return FilterSchedulerConf(path=path)
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise SchedulerConfigInvalid(path=path, reason=_one_line(exc)) from exc
    if not parser.has_section(GROUP):
        return FilterSchedulerConf(path=path, exists=True)
    section = parser[GROUP]
    values: dict = {}
    if "enabled_filters" in section:
        values["enabled_filters"] = _list(section["enabled_filters"])
    if "weight_classes" in section:
        values["weight_classes"] = _list(section["weight_classes"])
    if "ram_weight_multiplier" in section:
        raw = section["ram_weight_multiplier"].strip()
        try:
            values["ram_weight_multiplier"] = float(raw)
        except ValueError as exc:
            raise SchedulerConfigInvalid(
                path=path, reason=f"[{GROUP}] ram_weight_multiplier = {raw!r} is not a "
                                  "number") from exc
    if "filter_dirs" in section:
        values["filter_dirs"] = tuple(path.parent / entry
                                      for entry in _list(section["filter_dirs"]))
    # Options of [DEFAULT] show up in every section: they are not typos of this one.
    unknown = tuple(key for key in section if key not in KNOWN_OPTIONS
                    and key not in parser.defaults())
    return FilterSchedulerConf(path=path, exists=True, unknown_options=unknown, **values)


def _one_line(exc: Exception) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


DEFAULT_TEXT = f"""\
# nova.conf of this novalab deployment. nova-scheduler reads [filter_scheduler]
# before each request when this file has changed since (real Nova reads it at
# start only); `novalab scheduler filters` shows what it makes of it.

[{GROUP}]
# Filters, by class name, applied in this order (upstream's option).
enabled_filters = {", ".join(DEFAULT_ENABLED_FILTERS)}

# Weighers (upstream's option): all_weighers, or class names such as RAMWeigher.
weight_classes = {", ".join(DEFAULT_WEIGHT_CLASSES)}

# > 0 spreads instances onto the host with the most free RAM, < 0 stacks them.
ram_weight_multiplier = {DEFAULT_RAM_WEIGHT_MULTIPLIER}

# novalab only: directories of your own filter modules (*.py defining subclasses of
# BaseHostFilter), relative to this file. Their code runs inside nova-scheduler:
# only whoever can write this state directory can enable them. See docs/scheduler.md.
#filter_dirs = filters
"""


def write_default(path: str | os.PathLike) -> bool:
    """Write the commented default file unless one exists; True if written."""
    try:
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(DEFAULT_TEXT)
    except FileExistsError:
        return False
    return True
