"""Lab 10: say so when the cloud would make the vif drill wait minutes.

The vif-plugged-timeout drill waits the cloud's whole vif_plugging_timeout. The
lab cloud waits 10 s; a `novalab up` cloud waits what it was started with
(state.json), upstream's 300 s by default. Nothing to set up otherwise: the
learner injects each fault as the drill comes (`lab finish` clears them).
"""

import json

import click

LONG = 30.0


def start(ctx):
    try:
        state = json.loads((ctx.cloud.state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return
    timeout = state.get("vif_plugging_timeout")
    if isinstance(timeout, int | float) and timeout > LONG:
        click.echo(f"note: this cloud waits {timeout:g} s for network-vif-plugged, and the "
                   "vif drill (step 5) waits all of it (after `novalab down`, `novalab up "
                   "--vif-plugging-timeout 10 ...` waits 10 s)", err=True)
