"""Seeding: what a deployment registers before anyone logs in."""

from __future__ import annotations

from opentelemetry.trace import NoOpTracer

from novalab.reference.common.db import Database
from novalab.reference.deploy.seed import seed_images
from novalab.reference.glance.core import ImageRepo
from novalab.reference.glance.store import FileStore


def test_seeding_never_adopts_a_projects_image_of_the_name(tmp_path):
    """Issue 21, finding 12: with no public ``cirros`` (an admin deleted it), seeding took
    a project's own queued image called ``cirros``, uploaded into it, and the cloud's
    ``cirros`` (what the labs and ``novalab boot`` use) became that project's image."""
    db = Database(f"sqlite:///{tmp_path / 'glance.db'}")
    db.create_schema()
    repo = ImageRepo(db, NoOpTracer(), FileStore(tmp_path / "images"))
    squat = repo.create(name="cirros", owner="a-learners-project", visibility="shared",
                        status="queued")
    try:
        seeded = seed_images(repo)
    finally:
        db.dispose()
    assert seeded["id"] != squat["id"] and seeded["visibility"] == "public"
    assert seeded["status"] == "active"
