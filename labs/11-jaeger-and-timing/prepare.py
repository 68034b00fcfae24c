"""Lab 11: an image of the learner's own, that no compute host has cached yet.

A raw image of the size the attempt drew (8 to 24 MiB) makes the fetch worth
measuring, and its time the learner's own: rgw chunks, two checksums over all of
it. Idempotent: an active image of that name is kept (the learner may have booted
it already); one whose upload never finished is replaced.
"""

IMAGE_MIB = 16  # when the attempt drew none


def start(ctx):
    ctx.own_image(ctx.names["image"], int(ctx.parameters.get("mib", IMAGE_MIB)))
