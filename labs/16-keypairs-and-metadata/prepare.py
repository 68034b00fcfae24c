"""Lab 16: the guide checks fingerprints with ssh-keygen, which the OpenSSH client ships.

start() says so when ``ssh-keygen`` is not on the PATH: the lab still works
(Nova and the guest compute the fingerprints; the openstack CLI makes the
key), but the learner cannot check them independently until it is installed.
"""

from __future__ import annotations

import shutil

import click


def start(ctx):
    if shutil.which("ssh-keygen") is None:
        click.echo("note: ssh-keygen is not installed (Debian: apt-get install "
                   "openssh-client); steps 1 and 4 of the guide use it to check a "
                   "fingerprint yourself.")
