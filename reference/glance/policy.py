"""Who may do what to an image (``glance/policies/image.py`` defaults, on the common evaluator).

Glance's secure-RBAC defaults, compacted: a project's members add images and
change, upload to and delete the images their project owns; admins do so for
every project; only admins make an image ``public``. The target's
``project_id`` is the image's ``owner``, so a public image seeded by the admin
project is the admin project's to change.

Reading needs the reader role, as upstream's ``get_image`` and ``get_images``
rules say (``role:reader and (...)``): a token with no project scope carries no
roles and reads nothing, public images included, and neither does a service's
own token (role ``service`` only). Which images a reader sees, the visibility
half of upstream's rule (``public``, ``community``, ``shared``, their own), is
the repository's query (``ImageRepo._visible``).
"""

from __future__ import annotations

from novalab.reference.common import policy

READER = f"{policy.ADMIN} or role:reader"

RULES = {
    "get_image": READER,
    "get_images": READER,
    "download_image": READER,
    "add_image": policy.PROJECT_MEMBER_OR_ADMIN,
    "modify_image": policy.PROJECT_MEMBER_OR_ADMIN,
    "upload_image": policy.PROJECT_MEMBER_OR_ADMIN,
    "delete_image": policy.PROJECT_MEMBER_OR_ADMIN,
    "publicize_image": policy.ADMIN,
    "communitize_image": policy.PROJECT_MEMBER_OR_ADMIN,
    # An admin takes an image's data out of use and puts it back.
    "deactivate": policy.ADMIN,
    "reactivate": policy.ADMIN,
}

ENFORCER = policy.Enforcer(RULES)


def authorize(context, action: str, owner: str | None) -> None:
    """403 unless ``context`` may do ``action`` on an image owned by project ``owner``
    (for ``add_image``, the caller's own project). An image with no owner is no
    project's: only an admin may change it."""
    ENFORCER.authorize(context, action, {"project_id": owner or ""})
