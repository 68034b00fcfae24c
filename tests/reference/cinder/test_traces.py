"""What a trace shows: keystone validating cinder's caller, and a create crossing RPC to Ceph."""

from __future__ import annotations

from opentelemetry.trace import SpanKind

from novalab.tracing import attributes as attr


def _service(span) -> str:
    return span.resource.attributes[attr.SERVICE_NAME]


def _children(spans, parent):
    return [s for s in spans if s.parent is not None
            and s.parent.span_id == parent.context.span_id]


def _traced_get(env, session, path):
    with env.traced_client() as client, \
            env.tracer().start_as_current_span("client") as root:
        response = client.get(f"{session.volume}{path}",
                              headers={"X-Auth-Token": session.token})
    return response, root.get_span_context().trace_id


def test_first_request_of_a_token_is_validated_by_keystone(env):
    session = env.login("demo")          # a fresh token: not in cinder's cache yet
    response, trace_id = _traced_get(env, session, "/volumes")
    assert response.status_code == 200

    def validated(spans):
        return any(_service(s) == "keystone" and s.name == "GET /v3/auth/tokens"
                   for s in spans) and any(_service(s) == "cinder-api" and
                                           s.kind == SpanKind.SERVER for s in spans)

    spans = env.wait_for_spans(trace_id, validated)
    (server,) = [s for s in spans if _service(s) == "cinder-api" and s.kind == SpanKind.SERVER]
    assert server.name == "GET /v3/<project_id>/volumes"
    calls = [s for s in _children(spans, server) if s.kind == SpanKind.CLIENT
             and s.attributes.get("url.full", "").startswith(env.w.urls["keystone"])]
    (check,) = [c for c in calls if "/v3/auth/tokens" in c.attributes["url.full"]
                and c.attributes.get("http.request.method") == "GET"]
    assert _service(check) == "cinder-api"
    (keystone,) = [s for s in _children(spans, check) if s.kind == SpanKind.SERVER]
    assert _service(keystone) == "keystone" and keystone.name == "GET /v3/auth/tokens"

    # Within the cache time the same token is not validated again (keystonemiddleware).
    again, second_trace = _traced_get(env, session, "/volumes")
    assert again.status_code == 200
    spans = env.wait_for_spans(second_trace, lambda s: any(
        _service(x) == "cinder-api" and x.kind == SpanKind.SERVER for x in s))
    assert not [s for s in spans if _service(s) == "keystone"]


def test_create_crosses_rpc_to_the_volume_service_and_ceph(env):
    session = env.login("demo")
    with env.traced_client() as client, \
            env.tracer().start_as_current_span("client") as root:
        response = client.post(f"{session.volume}/volumes",
                               headers={"X-Auth-Token": session.token},
                               json={"volume": {"size": 1, "imageRef": env.cirros["id"]}})
    assert response.status_code == 202
    volume_id = response.json()["volume"]["id"]
    session.wait_volume(volume_id)
    trace_id = root.get_span_context().trace_id
    wanted = {"API.create", "VolumeAPI.create_volume", "VolumeManager.create_volume",
              "GET /v2/images/<image_id>/file", "process cinder-volume"}
    spans = env.wait_for_spans(trace_id, lambda s: wanted <= {x.name for x in s})
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (create,) = by_name["API.create"]
    assert _service(create) == "cinder-api"
    assert create.attributes[attr.CODE_FUNCTION_NAME] == "cinder.volume.api.API.create"
    (cast,) = by_name["VolumeAPI.create_volume"]
    (send,) = [s for s in _children(spans, cast) if s.kind == SpanKind.PRODUCER]
    assert send.attributes[attr.RPC_METHOD] == "create_volume"
    assert send.attributes[attr.NOVALAB_RPC_STYLE] == "cast"
    (process,) = [s for s in _children(spans, send) if s.kind == SpanKind.CONSUMER]
    assert _service(process) == "cinder-volume"
    assert process.resource.attributes[attr.HOST_NAME] == "cinder-volume-1"
    (manager,) = by_name["VolumeManager.create_volume"]
    assert manager.parent.span_id == process.context.span_id
    for name in ("CreateVolumeFromSpecTask._create_from_image_download",
                 "RBDDriver.create_volume", "RBDDriver.copy_image_to_volume",
                 "GlanceImageService.download"):
        assert [s for s in by_name[name] if _service(s) == "cinder-volume"], name
    # The image bytes come from glance with the user's token, in glance's own span.
    assert [s for s in spans if _service(s) == "glance-api"
            and s.name == "GET /v2/images/<image_id>/file"]
    # And go to the OSDs, whose spans are their own services'.
    assert any(_service(s) == "ceph-osd" for s in spans)
