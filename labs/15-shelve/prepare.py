"""Lab 15: the lab needs servers offloaded as they are shelved, upstream's default.

start() reads ``[DEFAULT] shelved_offload_time`` from the cloud's nova.conf, as
nova-compute does when it starts, and says so when another lab or the learner
set it to keep shelved servers on their host: then no shelve is followed by
the offload, and the unshelve is a start on the same host, with no scheduler.
"""

from __future__ import annotations

import click

from novalab.reference.nova.compute.shelve import shelved_offload_time
from novalab.reference.nova.scheduler.conf import CONF_NAME


def start(ctx):
    seconds = shelved_offload_time(ctx.cloud.state_dir / CONF_NAME)
    if seconds != 0:
        click.echo(f"note: shelved_offload_time is {seconds} in "
                   f"{ctx.cloud.state_dir / CONF_NAME}: a shelved server stays SHELVED on its "
                   "host. Set it to 0 (or remove it) and `novalab lab stop`, then start the "
                   "lab again, for the offload and the scheduler this lab follows.")
