"""Nova's Cinder client against a running cinder: the boot-from-volume attach, end to end."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry.trace import SpanKind

from novalab.reference.common import exception
from novalab.reference.nova.volume import cinder
from novalab.tracing import attributes as attr

CONNECTOR = {"platform": "x86_64", "os_type": "linux", "ip": "127.0.0.1",
             "host": "compute-1", "multipath": False, "do_local_attach": False}


@pytest.fixture(scope="module")
def session(env):
    return env.login("demo")


@pytest.fixture(scope="module")
def volume_api(env):
    return cinder.API(env.cinder, env.w.http("nova-compute", "compute-1"),
                      env.w.tracer("nova-compute", "compute-1"))


def test_boot_volume_lifecycle(env, session, volume_api):
    context = session.context()
    volume = volume_api.create(context, 1, "root", "boot volume",
                               image_id=env.cirros["id"])
    assert volume["status"] == "creating" and volume["display_name"] == "root"
    attempts = cinder.await_volume_created(volume_api, context, volume["id"])
    assert attempts >= 1
    ready = volume_api.get(context, volume["id"])
    assert ready["status"] == "available" and ready["bootable"] is True
    assert ready["attach_status"] == "detached"
    assert ready["volume_image_metadata"]["image_id"] == env.cirros["id"]

    server = str(uuid.uuid4())
    reserved = volume_api.attachment_create(context, volume["id"], server)
    assert reserved["status"] == "reserved" and reserved["connection_info"] == {}
    attached = volume_api.attachment_update(context, reserved["id"], CONNECTOR, "/dev/vda")
    info = attached["connection_info"]
    host, _, port = env.w.urls["ceph-mon"].rpartition(":")
    # Nested again under "data": what nova's libvirt volume drivers read.
    assert info["driver_volume_type"] == "rbd"
    assert info["data"]["name"] == f"volumes/volume-{volume['id']}"
    assert (info["data"]["hosts"], info["data"]["ports"]) == ([host], [port])
    assert info["data"]["auth_enabled"] is False and info["data"]["discard"] is True
    assert info["data"]["volume_id"] == volume["id"]
    assert "attachment_id" not in info["data"]
    assert info["status"] == "attaching" and info["instance"] == server
    assert attached["id"] == reserved["id"]

    volume_api.attachment_complete(context, reserved["id"])
    in_use = volume_api.get(context, volume["id"])
    assert in_use["status"] == "in-use" and in_use["attach_status"] == "attached"
    assert in_use["attachments"] == {server: {"attachment_id": reserved["id"],
                                              "mountpoint": "/dev/vda"}}
    shown = volume_api.attachment_get(context, reserved["id"])
    assert shown["connection_info"]["data"]["name"] == info["data"]["name"]

    with pytest.raises(cinder.InvalidInput):      # in use: cinder refuses with 400
        volume_api.delete(context, volume["id"])
    volume_api.attachment_delete(context, reserved["id"])
    volume_api.attachment_delete(context, reserved["id"])   # already gone: ignored
    assert volume_api.get(context, volume["id"])["status"] == "available"
    volume_api.delete(context, volume["id"])
    session.wait_gone(volume["id"])
    with pytest.raises(cinder.VolumeNotFound):
        volume_api.get(context, volume["id"])


def test_attachment_create_with_connector_and_mountpoint(env, session, volume_api):
    context = session.context()
    volume = volume_api.create(context, 1, "data", None)
    cinder.await_volume_created(volume_api, context, volume["id"])
    attachment = volume_api.attachment_create(context, volume["id"], str(uuid.uuid4()),
                                              connector=CONNECTOR, mountpoint="/dev/vdb")
    assert attachment["connection_info"]["data"]["name"] == f"volumes/volume-{volume['id']}"
    assert "mountpoint" not in CONNECTOR          # the caller's connector is not modified
    volume_api.attachment_complete(context, attachment["id"])
    (mapping,) = volume_api.get(context, volume["id"])["attachments"].values()
    assert mapping["mountpoint"] == "/dev/vdb"
    volume_api.attachment_delete(context, attachment["id"])


def test_faults_become_nova_exceptions(session, volume_api):
    context = session.context()
    with pytest.raises(cinder.VolumeNotFound):
        volume_api.get(context, str(uuid.uuid4()))
    with pytest.raises(cinder.InvalidInput):
        volume_api.create(context, 0, "none", None)
    with pytest.raises(cinder.VolumeNotFound):
        volume_api.attachment_create(context, str(uuid.uuid4()), str(uuid.uuid4()))
    with pytest.raises(cinder.VolumeAttachmentNotFound):
        volume_api.attachment_update(context, str(uuid.uuid4()), CONNECTOR)
    with pytest.raises(cinder.VolumeAttachmentNotFound):
        volume_api.attachment_complete(context, str(uuid.uuid4()))
    expired = context.__class__(**{**context.to_dict(), "auth_token": "expired"})
    with pytest.raises(cinder.CinderClientException) as info:
        volume_api.get(expired, str(uuid.uuid4()))
    assert info.value.code == 401
    assert isinstance(info.value, exception.NovaLabException)


def test_unreachable_cinder_is_a_connection_failure(env, session):
    api = cinder.API("http://127.0.0.1:9", env.w.http("nova-compute", "compute-1"),
                     env.w.tracer("nova-compute", "compute-1"))
    with pytest.raises(cinder.CinderConnectionFailed):
        api.get(session.context(), str(uuid.uuid4()))


def test_an_older_cinder_is_refused_before_attaching(session, volume_api, monkeypatch):
    from novalab.reference.cinder.api import versions

    monkeypatch.setattr(versions, "MAX_VERSION", (3, 27))
    with pytest.raises(cinder.CinderAPIVersionNotAvailable):
        volume_api.attachment_create(session.context(), str(uuid.uuid4()), str(uuid.uuid4()))


def test_waiting_for_a_volume_that_failed(env, session, volume_api, monkeypatch):
    def broken(volume):
        raise RuntimeError("pool full")

    monkeypatch.setattr(env.manager.driver, "create_volume", broken)
    context = session.context()
    volume = volume_api.create(context, 1, "doomed", None)
    with pytest.raises(cinder.VolumeNotCreated) as info:
        cinder.await_volume_created(volume_api, context, volume["id"])
    assert info.value.kwargs["volume_status"] == "error"
    assert "And its status is error." in str(info.value)


def test_waiting_is_bounded(session, volume_api, monkeypatch):
    calls = []

    def creating(context, volume_id, microversion="3.0"):
        calls.append(volume_id)
        return {"id": volume_id, "status": "creating"}

    monkeypatch.setattr(volume_api, "get", creating)
    with pytest.raises(cinder.VolumeNotCreated) as info:
        cinder.await_volume_created(volume_api, session.context(), "v", retries=3,
                                    interval=0.001)
    assert len(calls) == 4 and info.value.kwargs["attempts"] == 4
    calls.clear()
    with pytest.raises(cinder.VolumeNotCreated):
        cinder.await_volume_created(volume_api, session.context(), "v", retries=0)
    assert len(calls) == 1


def test_calls_are_upstream_named_spans_of_nova(env, session, volume_api):
    context = session.context()
    with env.tracer().start_as_current_span("client") as root:
        volume_api.attachment_delete(context, str(uuid.uuid4()))
    trace_id = root.get_span_context().trace_id
    spans = env.wait_for_spans(trace_id, lambda s: any(
        x.resource.attributes[attr.SERVICE_NAME] == "cinder-api"
        and x.kind == SpanKind.SERVER for x in s))
    (call,) = [s for s in spans if s.name == "API.attachment_delete"]
    assert call.resource.attributes[attr.SERVICE_NAME] == "nova-compute"
    assert call.attributes[attr.CODE_FUNCTION_NAME] == \
        "nova.volume.cinder.API.attachment_delete"
    (http,) = [s for s in spans if s.parent and s.parent.span_id == call.context.span_id]
    assert http.attributes["http.request.method"] == "DELETE"
    server = [s for s in spans if s.parent and s.parent.span_id == http.context.span_id]
    assert [s.name for s in server] == ["DELETE /v3/<project_id>/attachments/<attachment_id>"]
