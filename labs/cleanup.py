"""What `lab finish` removes: what a lab's learner made for it, found by ownership.

It runs in the lab service with the learner's own token, so it lists only what
the learner's project owns; of that, only what carries one of the lab's names
for this learner: every name a lab hands out is ``labNN-<user>`` or starts with
``labNN-<user>-`` (the course test checks it), so ``lab00-demo`` never matches
``lab00-demo2-vm``, a classmate's. Where a resource records the user who made it
(servers, volumes), it must be the learner. Servers go first (their ports and
volumes go with them as Nova deletes them), then volumes, images, and the ports,
subnets and networks left over (a network's subnets go with it), and the
learner's key pairs.
"""

from __future__ import annotations

import time

from novalab.labs.grading import Context

GONE_TIMEOUT = 120.0


def prefix(ctx: Context) -> str:
    return f"lab{ctx.lab.number}-{ctx.user}"


def is_the_labs(name: str, start: str) -> bool:
    """``name`` is one the lab hands this learner: the prefix itself or prefix + ``-``."""
    return name == start or name.startswith(f"{start}-")


def _named(items: list[dict], start: str, user_id: str = "") -> list[dict]:
    return [item for item in items if is_the_labs(str(item.get("name") or ""), start)
            and (not user_id or item.get("user_id", user_id) == user_id)]


def _wait(what: str, still_there) -> None:
    deadline = time.monotonic() + GONE_TIMEOUT
    while still_there():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} still there after {GONE_TIMEOUT:.0f} s")
        time.sleep(0.2)


def _keypairs(api) -> list[dict]:
    """The learner's own key pairs (a key pair is its user's, found by name)."""
    return [k["keypair"] for k in api.get("compute", "/os-keypairs")["keypairs"]]


def _listings(ctx: Context) -> dict:
    """How to list each kind, as the learner sees it."""
    api = ctx.api
    return {
        "servers": lambda: api.get("compute", "/servers/detail")["servers"],
        "volumes": lambda: api.get("volumev3", "/volumes/detail")["volumes"],
        "images": lambda: api.get("image", "/v2/images")["images"],
        "networks": lambda: api.get("network", "/v2.0/networks")["networks"],
        "subnets": lambda: api.get("network", "/v2.0/subnets")["subnets"],
        "ports": lambda: api.get("network", "/v2.0/ports")["ports"],
        "keypairs": lambda: _keypairs(api),
    }


def _mine(ctx: Context, kind: str, listing) -> list[dict]:
    """The lab's resources of ``kind`` for this learner (the maker checked where known)."""
    user_id = ctx.user_id if kind in ("servers", "volumes") else ""
    return _named(listing(), prefix(ctx), user_id)


def leftovers(ctx: Context) -> dict[str, list[str]]:
    """Names of what the lab's prefix still names, by kind (empty lists when clean)."""
    return {kind: [item.get("name") for item in _mine(ctx, kind, listing)]
            for kind, listing in _listings(ctx).items()}


def remove_all(ctx: Context) -> dict[str, list[str]]:
    """Delete what the lab's prefix names, waiting until it is gone; returns what went."""
    api, listings = ctx.api, _listings(ctx)

    def mine(kind: str) -> list[dict]:
        return _mine(ctx, kind, listings[kind])

    removed: dict[str, list[str]] = {}
    servers = mine("servers")
    for server in servers:
        api.request("DELETE", "compute", f"/servers/{server['id']}")
    _wait("servers", lambda: mine("servers"))
    removed["servers"] = [s["name"] for s in servers]
    volumes = mine("volumes")
    _wait("volumes being detached", lambda: any(
        v["status"] in ("in-use", "detaching", "attaching", "creating") for v in mine("volumes")))
    for volume in volumes:
        api.request("DELETE", "volumev3", f"/volumes/{volume['id']}")
    _wait("volumes", lambda: mine("volumes"))
    removed["volumes"] = [v["name"] for v in volumes]
    paths = {"images": ("image", "/v2/images/{id}"), "ports": ("network", "/v2.0/ports/{id}"),
             # on a network of the lab's, subnets would go with it anyway
             "subnets": ("network", "/v2.0/subnets/{id}"),
             "networks": ("network", "/v2.0/networks/{id}"),
             "keypairs": ("compute", "/os-keypairs/{name}")}
    for kind, (service, path) in paths.items():
        items = mine(kind)
        for item in items:
            api.request("DELETE", service, path.format(**item))
        removed[kind] = [item["name"] for item in items]
    return {kind: names for kind, names in removed.items() if names}
