"""cinder-api's WSGI application: versions, volumes and their actions, snapshots,
attachments, messages, quota sets and limits behind auth.

Every request but the version list at ``/`` passes keystonemiddleware first
(the Wiring's :class:`AuthProtocol`): the first request with a given token
shows cinder-api asking keystone ``GET /v3/auth/tokens``; later ones within
five minutes are answered from the middleware's token cache, as upstream's.
The project in the URL must be the token's (``Malformed request url`` otherwise).
"""

from __future__ import annotations

from flask import Flask, g, request

from novalab.reference.cinder.api import (
    attachments,
    messages,
    quota_sets,
    snapshots,
    versions,
    volume_actions,
    volumes,
)
from novalab.reference.common import exception
from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.db import Database
from novalab.reference.common.wsgi import install_common_handlers
from novalab.tracing.http import instrument_flask

# Block Storage resources upstream has and novalab leaves out (404 naming the gap).
LEFT_OUT_PATHS = ((r"^/v3/[^/]+/backups(/|$)", "Volume backups (Cinder backups)"),)


def create_app(db: Database, volume_api, auth: AuthProtocol, tracer,
               tracer_provider=None) -> Flask:
    app = Flask("cinder-api")
    if tracer_provider is not None:
        # First, so the SERVER span also covers the auth and version hooks below.
        instrument_flask(app, tracer_provider)
    install_common_handlers(app, left_out=LEFT_OUT_PATHS)
    auth.install(app)

    @app.before_request
    def _check_project():
        project_id = (request.view_args or {}).get("project_id")
        context = g.get("context")
        if project_id and context is not None and project_id != context.project_id:
            raise exception.Invalid("Malformed request url")

    versions.install(app)
    volumes.register(app, volumes.VolumeController(volume_api, tracer))
    snapshots.register(app, snapshots.SnapshotsController(volume_api, tracer))
    attachments.register(app, attachments.AttachmentsController(db, volume_api, tracer))
    messages.register(app, messages.MessagesController(db, tracer))
    volume_actions.register(app, volume_actions.VolumeActionsController(db, volume_api, tracer))
    quota_sets.register(app, quota_sets.QuotaSetsController(volume_api.quotas, tracer))
    return app
