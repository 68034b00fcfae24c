"""One cloud per state directory: the second is refused at once, a dead one frees it."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from conftest import make_cloud

from novalab.reference.deploy.statedir import StateDirBusy, StateDirLock


def test_a_second_embedded_cloud_on_the_same_state_dir_is_refused(tmp_path):
    first = make_cloud(tmp_path).start()
    try:
        with pytest.raises(StateDirBusy, match="a cloud already runs from .*embedded cloud"):
            make_cloud(tmp_path).start()
        # The refused start touched nothing of the first: it still answers.
        assert first.compute_api is not None
    finally:
        first.stop()
    second = make_cloud(tmp_path).start()  # free again once the first stopped
    second.stop()


def test_up_processes_share_the_lock_and_keep_embedded_clouds_out(tmp_path):
    with StateDirLock(tmp_path, shared=True), StateDirLock(tmp_path, shared=True):
        with pytest.raises(StateDirBusy):
            StateDirLock(tmp_path).acquire()
    with StateDirLock(tmp_path, holder="novalab serve"):
        with pytest.raises(StateDirBusy, match="novalab serve"):
            StateDirLock(tmp_path, shared=True).acquire()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from novalab.reference.deploy.statedir import StateDirLock; "
         f"StateDirLock({str(tmp_path)!r}, holder='doomed').acquire(); "
         "print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(StateDirBusy, match="doomed"):
        StateDirLock(tmp_path).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    StateDirLock(tmp_path).acquire().release()


def test_up_makes_its_state_dir_its_owners_only(tmp_path):
    """Issue 21, finding 10: `up`'s state dir (logs, traces, pid files) was 0755."""
    from novalab.reference.deploy.statedir import StateDir

    root = StateDir(tmp_path / ".novalab-up").make().root
    assert root.stat().st_mode & 0o777 == 0o700
