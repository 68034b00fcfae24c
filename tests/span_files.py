"""Span files as a deployment leaves them: service processes writing a trace store, and
the traces an untraced ``openstack server create --wait`` leaves behind."""

from __future__ import annotations

from opentelemetry import trace

from novalab.tracing.setup import Telemetry

CLI = "openstacksdk/4.0 keystoneauth1/5.0 python-requests/2.32 CPython/3.11"
SERVER_ID = "5d3c0a8e-0000-4000-8000-00000000abcd"
SECOND = 1_000_000_000


class Process:
    """One service process writing its own trace file, as `novalab service` does."""

    def __init__(self, directory, service):
        self.telemetry = Telemetry(file_path=directory / f"{service}.jsonl", otlp=False)
        self.tracer = self.telemetry.tracer(service)

    def request(self, method, route, path, start, *, agent=CLI, parent=None, children=()):
        """A SERVER span (a new trace unless ``parent``), with INTERNAL children."""
        context = trace.set_span_in_context(parent) if parent else None
        span = self.tracer.start_span(f"{method} {route}", context=context,
                                      kind=trace.SpanKind.SERVER, start_time=start, attributes={
                                          "http.request.method": method, "http.route": route,
                                          "url.path": path, "user_agent.original": agent,
                                          "client.address": "127.0.0.1"})
        for name, attributes in children:
            self.tracer.start_span(name, context=trace.set_span_in_context(span),
                                   start_time=start + 1000,
                                   attributes=attributes).end(end_time=start + 2000)
        span.end(end_time=start + SECOND // 10)
        return span

    def close(self):
        self.telemetry.shutdown()


def flush(processes, *services):
    for service in services:
        processes(service).telemetry.force_flush()


def cli_session(processes):
    """What `openstack server create --wait` leaves behind: one trace per request."""
    keystone, api, glance = processes("keystone"), processes("nova-api"), processes("glance-api")
    spans = {
        "old-token": keystone.request("POST", "/v3/auth/tokens", "/v3/auth/tokens", 1 * SECOND),
        "discovery": keystone.request("GET", "/v3", "/v3", 99 * SECOND),
        "token": keystone.request("POST", "/v3/auth/tokens", "/v3/auth/tokens", 100 * SECOND),
        "flavor": api.request("GET", "/v2.1/flavors/<flavor_id>", "/v2.1/flavors/m1.nano",
                              101 * SECOND),
        "image": glance.request("GET", "/v2/images", "/v2/images", 102 * SECOND),
        "create": api.request("POST", "/v2.1/servers", "/v2.1/servers", 103 * SECOND,
                              children=[("API._provision_instances",
                                         {"nova.instance.uuid": SERVER_ID})]),
        "poll-1": api.request("GET", "/v2.1/servers/<server_id>", f"/v2.1/servers/{SERVER_ID}",
                              104 * SECOND),
        "poll-2": api.request("GET", "/v2.1/servers/<server_id>", f"/v2.1/servers/{SERVER_ID}",
                              106 * SECOND),
        "read": glance.request("GET", "/v2/images/<image_id>", "/v2/images/x", 107 * SECOND),
        # Not this session: another client, a health probe, and much later work.
        "other-agent": api.request("GET", "/v2.1/servers/<server_id>",
                                   f"/v2.1/servers/{SERVER_ID}", 105 * SECOND,
                                   agent="python-novaclient"),
        "probe": api.request("GET", "/", "/", 102 * SECOND, agent="novalab-health/1"),
        "later": api.request("GET", "/v2.1/flavors/detail", "/v2.1/flavors/detail",
                             200 * SECOND),
    }
    flush(processes, "keystone", "nova-api", "glance-api")
    return {name: format(span.get_span_context().trace_id, "032x")
            for name, span in spans.items()}


