"""Lab 17: a server the learner left locked would stop `lab finish`.

Nova refuses to delete a locked server to anyone but an admin (409), and `lab
finish` deletes as the learner. finish() lifts the learner's own lock first, as
`openstack server unlock` would.
"""

from __future__ import annotations


def finish(ctx):
    server = ctx.server(ctx.names["server"])
    if server is not None and server.get("locked"):
        ctx.api.request("POST", "compute", f"/servers/{server['id']}/action",
                        json={"unlock": None})
