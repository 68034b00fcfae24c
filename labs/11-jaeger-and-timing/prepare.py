"""Lab 11: an image of the learner's own, that no compute host has cached yet.

A raw image of the size the attempt drew (8 to 24 MiB) makes the fetch worth
measuring, and its time the learner's own: rgw chunks, two checksums over all of
it. Idempotent: an active image of that name is kept (the learner may have booted
it already); one whose upload never finished is replaced.
"""

import os

IMAGE_MIB = 16  # when the attempt drew none


def start(ctx):
    name = ctx.names["image"]
    api = ctx.api
    images = api.get("image", "/v2/images", name=name)["images"]
    if any(image["status"] == "active" for image in images):
        return
    for image in images:
        api.request("DELETE", "image", f"/v2/images/{image['id']}")
    created = api.request("POST", "image", "/v2/images",
                          json={"name": name, "disk_format": "raw", "container_format": "bare"})
    created.raise_for_status()
    uploaded = api.request("PUT", "image", f"/v2/images/{created.json()['id']}/file",
                           content=os.urandom(int(ctx.parameters.get("mib", IMAGE_MIB)) << 20),
                           headers={"Content-Type": "application/octet-stream"})
    uploaded.raise_for_status()
