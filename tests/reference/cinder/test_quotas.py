"""Cinder's quotas: volumes and gigabytes checked before work, os-quota-sets and limits."""

from __future__ import annotations

import pytest

from novalab.reference.common.context import RequestContext


@pytest.fixture
def quota_of(admin):
    """Set one of the demo project's limits as admin; every limit is reset afterwards."""
    touched = []

    def set_quota(project_id: str, **values):
        touched.append(project_id)
        response = admin.request("PUT", f"/os-quota-sets/{project_id}",
                                 json={"quota_set": values})
        assert response.status_code == 200, response.text
        return response.json()["quota_set"]

    yield set_quota
    for project_id in touched:
        admin.request("DELETE", f"/os-quota-sets/{project_id}")


def _usage(session) -> dict:
    body = session.request("GET", f"/os-quota-sets/{session.project_id}?usage=true").json()
    return body["quota_set"]


def test_volumes_over_quota_are_413_before_the_row(demo, quota_of):
    used = _usage(demo)["volumes"]["in_use"]
    quota_of(demo.project_id, volumes=used)
    before = len(demo.request("GET", "/volumes").json()["volumes"])
    response = demo.request("POST", "/volumes", json={"volume": {"size": 1}})
    assert response.status_code == 413, response.text
    assert response.json()["overLimit"]["message"] == \
        f"Maximum number of volumes allowed ({used}) exceeded for quota 'volumes'."
    assert len(demo.request("GET", "/volumes").json()["volumes"]) == before


def test_gigabytes_over_quota_are_413(demo, quota_of):
    usage = _usage(demo)
    quota_of(demo.project_id, gigabytes=usage["gigabytes"]["in_use"] + 2)
    response = demo.request("POST", "/volumes", json={"volume": {"size": 3}})
    assert response.status_code == 413, response.text
    assert "exceeds allowed gigabytes quota. Requested 3G" in \
        response.json()["overLimit"]["message"]
    quota_of(demo.project_id, per_volume_gigabytes=1)
    too_large = demo.request("POST", "/volumes", json={"volume": {"size": 2}})
    assert too_large.status_code == 413
    assert "larger than maximum allowed limit 1G" in too_large.text


def test_a_recheck_after_the_row_undoes_a_racing_create(env, demo, quota_of, monkeypatch):
    """Two creates checked at one moment both pass the check; the recheck after the row is
    written catches the second, which deletes its row."""
    api = env.volume_api
    used = _usage(demo)["volumes"]["in_use"]
    quota_of(demo.project_id, volumes=used)
    monkeypatch.setattr(api.quotas, "check_deltas", lambda *args, **kwargs: None)
    before = {v["id"] for v in demo.request("GET", "/volumes").json()["volumes"]}
    response = demo.request("POST", "/volumes", json={"volume": {"size": 1}})
    assert response.status_code == 413, response.text
    after = {v["id"] for v in demo.request("GET", "/volumes").json()["volumes"]}
    assert after == before


def test_quota_set_show_usage_defaults_update_delete(demo, admin):
    shown = demo.request("GET", f"/os-quota-sets/{demo.project_id}")
    assert shown.status_code == 200
    quota_set = shown.json()["quota_set"]
    assert quota_set["id"] == demo.project_id
    assert {"volumes", "gigabytes", "snapshots", "backups", "backup_gigabytes", "groups",
            "per_volume_gigabytes"} <= set(quota_set)
    volume = demo.create_volume(size=2)
    usage = _usage(demo)
    assert usage["volumes"]["in_use"] >= 1 and usage["gigabytes"]["in_use"] >= 2
    assert usage["snapshots"] == {"limit": quota_set["snapshots"], "in_use": 0,
                                  "reserved": 0, "allocated": 0}
    defaults = demo.request("GET", f"/os-quota-sets/{demo.project_id}/defaults").json()
    assert defaults["quota_set"]["volumes"] == 10 and defaults["quota_set"]["gigabytes"] == 1000
    # Only admins change quotas; a member may not, not even its own project's.
    denied = demo.request("PUT", f"/os-quota-sets/{demo.project_id}",
                          json={"quota_set": {"volumes": 1000}})
    assert denied.status_code == 403 and "forbidden" in denied.json()
    assert demo.request("DELETE", f"/os-quota-sets/{demo.project_id}").status_code == 403
    updated = admin.request("PUT", f"/os-quota-sets/{demo.project_id}",
                            json={"quota_set": {"volumes": "25", "gigabytes": -1}})
    assert updated.status_code == 200, updated.text
    assert updated.json()["quota_set"]["volumes"] == 25
    assert _usage(demo)["gigabytes"]["limit"] == -1
    assert admin.request("DELETE", f"/os-quota-sets/{demo.project_id}").status_code == 200
    assert _usage(demo)["volumes"]["limit"] == 10
    demo.request("DELETE", f"/volumes/{volume['id']}")


def test_another_projects_quota_is_not_a_members_to_see(demo, admin):
    response = demo.request("GET", f"/os-quota-sets/{admin.project_id}")
    assert response.status_code == 403
    assert admin.request("GET", f"/os-quota-sets/{demo.project_id}").status_code == 200


@pytest.mark.parametrize("body", [
    {}, {"quota_set": {"volumes": "many"}}, {"quota_set": {"volumes": -2}},
    {"quota_set": {"volumes": 2**31}}, {"quota_set": {"cores": 5}}, {"quota_set": []},
    {"quota_set": {"volumes": 1}, "extra": 1},
])
def test_bad_quota_bodies_are_400(demo, admin, body):
    response = admin.request("PUT", f"/os-quota-sets/{demo.project_id}", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["badRequest"]["code"] == 400


def test_absolute_limits(demo):
    response = demo.request("GET", "/limits")
    assert response.status_code == 200
    absolute = response.json()["limits"]["absolute"]
    usage = _usage(demo)
    assert absolute["maxTotalVolumes"] == usage["volumes"]["limit"]
    assert absolute["maxTotalVolumeGigabytes"] == usage["gigabytes"]["limit"]
    assert absolute["totalVolumesUsed"] == usage["volumes"]["in_use"]
    assert absolute["totalGigabytesUsed"] == usage["gigabytes"]["in_use"]
    assert absolute["totalSnapshotsUsed"] == 0
    assert response.json()["limits"]["rate"] == []


def test_openstacksdk_reads_and_sets_volume_quotas(env, demo, admin):
    """What ``openstack quota show/set --volumes`` and ``limits show`` call."""
    import openstack

    def connect(user):
        return openstack.connect(
            auth_url=f"{env.w.urls['keystone']}/v3", username=user,
            password=env.w.config.credentials.password_for(user), project_name=user,
            user_domain_id="default", project_domain_id="default", region_name=None,
            identity_api_version="3")

    conn = connect("admin")
    try:
        conn.block_storage.update_quota_set(demo.project_id, volumes=17)
        quota = conn.block_storage.get_quota_set(demo.project_id, usage=True)
        assert quota.volumes == 17 and "volumes" in quota.usage
        conn.block_storage.revert_quota_set(demo.project_id)
        assert conn.block_storage.get_quota_set(demo.project_id).volumes == 10
    finally:
        conn.close()
    mine = connect("demo")
    try:
        limits = mine.block_storage.get_limits()
        assert limits.absolute.max_total_volumes == 10
    finally:
        mine.close()


def test_policy_runs_on_the_common_enforcer(demo):
    from novalab.reference.cinder import policy
    from novalab.reference.common.policy import Enforcer

    assert isinstance(policy.ENFORCER, Enforcer)
    reader = RequestContext(user_id="u", project_id=demo.project_id, roles=["reader"])
    assert policy.check(reader, "volume_extension:quotas:show",
                        {"project_id": demo.project_id})
    assert not policy.check(reader, "volume_extension:quotas:update",
                            {"project_id": demo.project_id})
    unscoped = RequestContext(user_id="u", project_id=None, roles=[])
    assert not policy.check(unscoped, "volume:get_all")
