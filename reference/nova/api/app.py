"""nova-api's WSGI application: versions, flavors, servers and their actions behind token auth."""

from __future__ import annotations

from flask import Flask

from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.db import Database
from novalab.reference.common.wsgi import (
    COMPUTE_REQUEST_ID_HEADER,
    REQUEST_ID_HEADER,
    install_common_handlers,
)
from novalab.reference.nova.api import (
    actions,
    availability_zone,
    flavors,
    hypervisors,
    instance_actions,
    keypairs,
    quota_sets,
    remote_consoles,
    security_groups,
    server_actions,
    server_external_events,
    server_metadata,
    server_tags,
    servers,
    services,
    shelve,
    simple_tenant_usage,
    versions,
    volume_attachments,
)
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.reference.nova.compute.api import InstanceActionAPI
from novalab.tracing.http import instrument_flask

# Compute API resources that upstream has and novalab leaves out: a request for one
# answers 404 naming the gap instead of a bare "could not be found" (common/wsgi.py).
LEFT_OUT_PATHS = (
    (r"^/v2\.1/os-server-groups(/|$)", "Server groups (os-server-groups)"),
    (r"^/v2\.1/(os-migrations|servers/[^/]+/migrations)(/|$)",
     "Migrations (os-migrations, servers/{id}/migrations)"),
    (r"^/v2\.1/os-console-auth-tokens(/|$)", "Console URLs (os-console-auth-tokens)"),
    (r"^/v2\.1/(os-floating-ips|os-floating-ip-pools)(/|$)", "Floating IPs (os-floating-ips)"),
    (r"^/v2\.1/(os-security-groups|os-security-group-rules)(/|$)",
     "The security groups proxy (os-security-groups, os-security-group-rules; deprecated "
     "at 2.36: use Neutron's /v2.0/security-groups)"),
    (r"^/v2\.1/servers/[^/]+/os-interface(/|$)", "Port interfaces (os-interface)"),
    # GET /os-aggregates answers the empty list novalab has; making one is left out.
    (r"^/v2\.1/os-aggregates(/|$)", "Host aggregates (os-aggregates: novalab has none)"),
)


def create_app(db: Database, compute_api: ComputeAPI, auth: AuthProtocol, tracer,
               tracer_provider=None) -> Flask:
    app = Flask("nova-api")
    if tracer_provider is not None:
        # First, so the SERVER span also covers the auth and version hooks below.
        instrument_flask(app, tracer_provider)
    # Nova answers with the request id under its older name too (ComputeReqIdMiddleware).
    install_common_handlers(app,
                            request_id_headers=(REQUEST_ID_HEADER, COMPUTE_REQUEST_ID_HEADER),
                            left_out=LEFT_OUT_PATHS)
    versions.install(app)
    auth.install(app, public_paths=("", "/v2.1"))
    servers_controller = servers.ServersController(db, compute_api, tracer)
    servers.register(app, servers_controller)
    # POST /servers/{id}/action: each controller's @action methods, by the body's key.
    consoles = remote_consoles.RemoteConsolesController(compute_api, tracer)
    server_security_groups = security_groups.SecurityGroupsController(compute_api, tracer)
    actions.register(app, servers_controller, shelve.ShelveController(compute_api, tracer),
                     server_actions.ServerActionsController(compute_api, tracer), consoles,
                     server_security_groups)
    security_groups.register(app, server_security_groups)
    remote_consoles.register(app, consoles)
    server_tags.register(app, compute_api, tracer)
    server_metadata.register(app, compute_api, tracer)
    flavors.register(app, flavors.FlavorsController(db, tracer))
    instance_actions.register(app, instance_actions.InstanceActionsController(
        compute_api, InstanceActionAPI(db, tracer), tracer))
    server_external_events.register(
        app, server_external_events.ServerExternalEventsController(db, compute_api, tracer))
    quota_sets.register(app, compute_api.quotas, tracer)
    keypairs.register(app, compute_api, tracer)
    volume_attachments.register(app, compute_api, tracer)
    # The admin views of the cloud's hosts and services, and the projects' usage.
    hypervisors.register(app, db, tracer)
    services.register(app, db, tracer)
    availability_zone.register(app, db, tracer)
    simple_tenant_usage.register(app, db, tracer)
    return app
