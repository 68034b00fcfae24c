"""Lab 04: while it runs, nova-scheduler also loads filters from the learner's lab folder.

start() points ``[filter_scheduler] filter_dirs`` of the cloud's nova.conf at the
lab folder, keeping the file as it was next to it (once: `lab start` may run
again); finish() puts nova.conf back as it was, so the next lab's boots meet the
filters they expect. The learner's filter goes with the lab folder, which
`lab finish` removes after this.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from novalab.reference.nova.scheduler.conf import CONF_NAME, DEFAULT_TEXT, GROUP, write_default


def _conf(ctx) -> Path:
    return ctx.cloud.state_dir / CONF_NAME


def _kept(ctx) -> Path:
    """nova.conf as it was before the lab (empty: there was none)."""
    return ctx.cloud.state_dir / f"{CONF_NAME}.before-{ctx.lab.name}"


def _write(path: Path, text: str) -> None:
    """Whole or not at all: the scheduler may read the file at any moment."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def with_filter_dirs(text: str, folder: str) -> str:
    """``text`` (a nova.conf) whose ``[filter_scheduler] filter_dirs`` is ``folder``."""
    line = (f"# lab 04: your filters, in your lab folder (`novalab lab dir 04`)\n"
            f"filter_dirs = {folder}")
    header = re.search(rf"^\[{GROUP}\][ \t]*$", text, re.M)
    if header is None:
        return text.rstrip("\n") + f"\n\n[{GROUP}]\n{line}\n"
    after = re.search(r"^\[", text[header.end():], re.M)
    end = header.end() + after.start() if after else len(text)
    section = text[header.end():end]
    section = re.sub(r"^# lab 04: .*\n", "", section, flags=re.M)
    option = re.compile(r"^[ \t]*#?[ \t]*filter_dirs[ \t]*[=:].*$", re.M)
    if option.search(section):
        section = option.sub(lambda _: line, section, count=1)
    else:
        section = f"\n{line}" + section
    return text[:header.end()] + section + text[end:]


def start(ctx) -> None:
    conf, kept = _conf(ctx), _kept(ctx)
    before = conf.read_text(encoding="utf-8") if conf.exists() else ""
    if not kept.exists():
        _write(kept, before)
    _write(conf, with_filter_dirs(before or DEFAULT_TEXT, str(ctx.workdir.absolute())))


def finish(ctx) -> None:
    conf, kept = _conf(ctx), _kept(ctx)
    if not kept.exists():
        return  # never started on this cloud, or already put back
    before = kept.read_text(encoding="utf-8")
    if before:
        _write(conf, before)
    else:
        conf.unlink(missing_ok=True)
        write_default(conf)
    kept.unlink()
