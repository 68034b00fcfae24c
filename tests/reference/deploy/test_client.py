"""The small client ``novalab boot`` uses: how it finds what the user names."""

from __future__ import annotations


def test_boot_finds_the_clouds_own_cirros(shared_cloud, login):
    """Issue 21, finding 12: ``find_image`` took the newest image of the name, so an image
    called ``cirros`` that anyone made (the caller's own, a community one another project
    made) replaced the seeded one in ``novalab boot``. A name means the cloud's public
    image of that name, the first made (the seed)."""
    demo, alt = login(shared_cloud, "demo"), login(shared_cloud, "alt_demo")
    made = [session.request("POST", f"{session.image}/v2/images",
                            json={"name": "cirros", "visibility": visibility}).json()
            for session, visibility in ((alt, "community"), (demo, "shared"))]
    try:
        for session in (demo, alt):
            assert session.client.find_image("cirros")["id"] == shared_cloud.cirros["id"]
        assert demo.client.find_image(made[1]["id"])["id"] == made[1]["id"]  # an id is exact
    finally:
        for session, image in zip((alt, demo), made, strict=True):
            session.request("DELETE", f"{session.image}/v2/images/{image['id']}")
