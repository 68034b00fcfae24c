"""Lab 10: arm the learner's drills, for their project alone, and say nothing of where.

The lab service injects the faults (an administrator's act) as the attempt starts:
each ``--once``, scoped so that only this learner's boots meet it (their project;
for image-checksum, the object of the image uploaded for them; for compute-crash,
their fifth server's name). Their boots, in the guide's order, each meet the first
armed fault their path reaches: a plain boot the binding, a boot with a volume the
backend, a boot of the learner's image its fetch, a plain boot again the plug.
``lab reset 10`` arms them again; ``lab finish 10`` clears what is left.
"""

import json

import click

from novalab.labs.cloud import describe
from novalab.reference.common.faults import Faults

LONG = 30.0
IMAGE_MIB = 1


def _drills(ctx) -> dict[str, dict]:
    """{fault: scope} of this learner's drills (compute-crash only on `novalab up`)."""
    project = {"project_id": ctx.api.client.project_id}
    drills = {"port-binding": project, "volume-error": project,
              "vif-plugged-timeout": project}
    images = ctx.api.get("image", "/v2/images", name=ctx.names["image"])["images"]
    if images:
        drills["image-checksum"] = {"object": images[0]["id"]}
    cloud = describe(ctx.cloud.state_dir)
    if cloud is not None and cloud.kind == "up":
        drills["compute-crash"] = {**project, "server": ctx.names["vm5"]}
    return drills


def start(ctx):
    # An image of the learner's own, that no host has cached: only a fetch meets
    # image-checksum.
    ctx.own_image(ctx.names["image"], IMAGE_MIB)
    faults = Faults(ctx.cloud.state_dir)
    for name, scope in _drills(ctx).items():
        faults.inject(name, once=True, scope=scope)
    _warn_of_a_long_wait(ctx)


def finish(ctx):
    faults = Faults(ctx.cloud.state_dir)
    for name, scope in _drills(ctx).items():
        faults.clear(name, scope=scope)


def _warn_of_a_long_wait(ctx) -> None:
    """The plug drill waits the cloud's whole vif_plugging_timeout: 10 s on the lab
    cloud, what a `novalab up` cloud was started with (upstream's 300 s by default)."""
    try:
        state = json.loads((ctx.cloud.state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return
    timeout = state.get("vif_plugging_timeout")
    if isinstance(timeout, int | float) and timeout > LONG:
        click.echo(f"note: this cloud waits {timeout:g} s for network-vif-plugged, and "
                   "your fourth drill waits all of it (after `novalab down`, `novalab up "
                   "--vif-plugging-timeout 10 ...` waits 10 s)", err=True)
