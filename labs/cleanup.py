"""What `lab finish` removes: everything a lab and its learner made, found by name.

Every name a lab hands out starts with its prefix, ``labNN-<user>`` (the
course test checks it), so whatever the learner made with those names is
theirs to lose and nobody else's: servers (their ports and volumes go with
them as Nova deletes them), then volumes, images, and the ports, subnets and
networks left over (a network's subnets go with it), and the learner's key pairs.
"""

from __future__ import annotations

import time

from novalab.labs.grading import Context

GONE_TIMEOUT = 120.0


def prefix(ctx: Context) -> str:
    return f"lab{ctx.lab.number}-{ctx.user}"


def _named(items: list[dict], start: str) -> list[dict]:
    return [item for item in items if str(item.get("name") or "").startswith(start)]


def _wait(what: str, still_there) -> None:
    deadline = time.monotonic() + GONE_TIMEOUT
    while still_there():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} still there after {GONE_TIMEOUT:.0f} s")
        time.sleep(0.2)


def _keypairs(api) -> list[dict]:
    """The learner's own key pairs (a key pair is its user's, found by name)."""
    return [k["keypair"] for k in api.get("compute", "/os-keypairs")["keypairs"]]


def leftovers(ctx: Context) -> dict[str, list[str]]:
    """Names of what the lab's prefix still names, by kind (empty lists when clean)."""
    start, api = prefix(ctx), ctx.api
    found = {
        "servers": _named(api.get("compute", "/servers/detail")["servers"], start),
        "volumes": _named(api.get("volumev3", "/volumes/detail")["volumes"], start),
        "images": _named(api.get("image", "/v2/images")["images"], start),
        "networks": _named(api.get("network", "/v2.0/networks")["networks"], start),
        "subnets": _named(api.get("network", "/v2.0/subnets")["subnets"], start),
        "ports": _named(api.get("network", "/v2.0/ports")["ports"], start),
        "keypairs": _named(_keypairs(api), start),
    }
    return {kind: [item.get("name") for item in items] for kind, items in found.items()}


def remove_all(ctx: Context) -> dict[str, list[str]]:
    """Delete what the lab's prefix names, waiting until it is gone; returns what went."""
    start, api = prefix(ctx), ctx.api
    removed: dict[str, list[str]] = {}
    servers = _named(api.get("compute", "/servers/detail")["servers"], start)
    for server in servers:
        api.request("DELETE", "compute", f"/servers/{server['id']}")
    _wait("servers", lambda: _named(api.get("compute", "/servers/detail")["servers"], start))
    removed["servers"] = [s["name"] for s in servers]
    volumes = _named(api.get("volumev3", "/volumes/detail")["volumes"], start)
    _wait("volumes being detached", lambda: any(
        v["status"] in ("in-use", "detaching", "attaching", "creating") for v in
        _named(api.get("volumev3", "/volumes/detail")["volumes"], start)))
    for volume in volumes:
        api.request("DELETE", "volumev3", f"/volumes/{volume['id']}")
    _wait("volumes", lambda: _named(api.get("volumev3", "/volumes/detail")["volumes"], start))
    removed["volumes"] = [v["name"] for v in volumes]
    images = _named(api.get("image", "/v2/images")["images"], start)
    for image in images:
        api.request("DELETE", "image", f"/v2/images/{image['id']}")
    removed["images"] = [i["name"] for i in images]
    ports = _named(api.get("network", "/v2.0/ports")["ports"], start)
    for port in ports:
        api.request("DELETE", "network", f"/v2.0/ports/{port['id']}")
    removed["ports"] = [p["name"] for p in ports]
    subnets = _named(api.get("network", "/v2.0/subnets")["subnets"], start)
    for subnet in subnets:  # on a network of the lab's they would go with it anyway
        api.request("DELETE", "network", f"/v2.0/subnets/{subnet['id']}")
    removed["subnets"] = [s["name"] for s in subnets]
    networks = _named(api.get("network", "/v2.0/networks")["networks"], start)
    for network in networks:
        api.request("DELETE", "network", f"/v2.0/networks/{network['id']}")
    removed["networks"] = [n["name"] for n in networks]
    keypairs = _named(_keypairs(api), start)
    for keypair in keypairs:
        api.request("DELETE", "compute", f"/os-keypairs/{keypair['name']}")
    removed["keypairs"] = [k["name"] for k in keypairs]
    return {kind: names for kind, names in removed.items() if names}
