"""placement-api's WSGI application (``placement/deploy.py``, ``placement/handler.py``).

The order of the pipeline is upstream's: request id, then keystonemiddleware
(every path but ``/`` needs a token), then the microversion, then the route's
handler. ``ROUTES`` is upstream's ``ROUTE_DECLARATIONS``, trimmed to what
novalab serves; a known path with another method is a 405, an unknown path a
404, both in placement's error shape.
"""

from __future__ import annotations

from flask import Flask, request
from werkzeug.exceptions import HTTPException

from novalab.reference.common.auth_token import AuthProtocol
from novalab.reference.common.wsgi import install_common_handlers
from novalab.reference.placement import exception, microversion
from novalab.reference.placement.handlers import util
from novalab.reference.placement.handlers.allocation import AllocationHandler
from novalab.reference.placement.handlers.allocation_candidate import (
    AllocationCandidateHandler,
)
from novalab.reference.placement.handlers.inventory import InventoryHandler
from novalab.reference.placement.handlers.resource_class import ResourceClassHandler
from novalab.reference.placement.handlers.resource_provider import ResourceProviderHandler
from novalab.reference.placement.handlers.root import RootHandler
from novalab.reference.placement.handlers.usage import UsageHandler
from novalab.reference.placement.objects.allocation import Allocations
from novalab.reference.placement.objects.allocation_candidate import AllocationCandidates
from novalab.reference.placement.objects.resource_provider import ResourceProviders
from novalab.tracing.http import instrument_flask


def routes(tracer, providers: ResourceProviders, allocations: Allocations,
           candidates: AllocationCandidates) -> dict[str, dict[str, object]]:
    rp = ResourceProviderHandler(providers, tracer)
    inventory = InventoryHandler(providers, tracer)
    usage = UsageHandler(providers, allocations, tracer)
    allocation = AllocationHandler(providers, allocations, tracer)
    return {
        "/": {"GET": RootHandler(tracer).home},
        "/resource_classes": {"GET": microversion.version_handler(microversion.RESOURCE_CLASSES)(
            ResourceClassHandler(tracer).list_resource_classes)},
        "/resource_providers": {"GET": rp.list_resource_providers,
                                "POST": rp.create_resource_provider},
        "/resource_providers/<uuid>": {"GET": rp.get_resource_provider,
                                       "PUT": rp.update_resource_provider,
                                       "DELETE": rp.delete_resource_provider},
        "/resource_providers/<uuid>/inventories": {
            "GET": inventory.get_inventories, "POST": inventory.create_inventory,
            "PUT": inventory.set_inventories,
            "DELETE": microversion.version_handler(microversion.DELETE_INVENTORIES, status=405)(
                inventory.delete_inventories)},
        "/resource_providers/<uuid>/inventories/<resource_class>": {
            "GET": inventory.get_inventory, "PUT": inventory.update_inventory,
            "DELETE": inventory.delete_inventory},
        "/resource_providers/<uuid>/usages": {"GET": usage.list_usages},
        "/resource_providers/<uuid>/allocations": {"GET": allocation.list_for_resource_provider},
        "/allocations": {"POST": allocation.set_allocations},
        "/allocations/<consumer_uuid>": {"GET": allocation.list_for_consumer,
                                         "PUT": allocation.set_allocations_for_consumer,
                                         "DELETE": allocation.delete_allocations},
        "/allocation_candidates": {
            "GET": AllocationCandidateHandler(candidates, tracer).list_allocation_candidates},
        "/usages": {"GET": microversion.version_handler(microversion.USAGES)(
            usage.get_total_usages)},
    }


def create_app(providers: ResourceProviders, allocations: Allocations,
               candidates: AllocationCandidates, auth: AuthProtocol, tracer,
               tracer_provider=None) -> Flask:
    app = Flask("placement-api")
    if tracer_provider is not None:
        # First, so the SERVER span also covers auth and the version negotiation.
        instrument_flask(app, tracer_provider)
    install_common_handlers(app, fault=util.fault)
    auth.install(app)
    microversion.install(app)

    @app.before_request
    def _content_type_with_body():
        if request.content_length and not request.content_type:
            raise exception.BadRequest("content-type header required when "
                                       "content-length > 0")

    @app.errorhandler(exception.HTTPError)
    def _placement_error(exc):
        return util.fault(exc.code, exc.format_message(), exc.error_code)

    @app.errorhandler(exception.ResourceProviderNotFound)
    def _provider_gone(exc):
        """A provider deleted under a request (upstream maps any NotFound to a 404)."""
        return util.fault(404, str(exc))

    @app.errorhandler(HTTPException)
    def _http_error(exc):
        """Routing's 404 and 405 (with its ``Allow``), a body too large: placement's shape."""
        message = "" if exc.code == 404 else \
            "The method specified is not allowed for this resource." if exc.code == 405 \
            else exc.description or ""
        response = util.fault(exc.code or 500, message)
        if exc.code == 405 and getattr(exc, "valid_methods", None):
            response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
        return response

    for rule, methods in routes(tracer, providers, allocations, candidates).items():
        for method, view in methods.items():
            app.add_url_rule(rule, f"{method} {rule}", view, methods=[method])
    return app
