"""``/v3`` regions, services and endpoints: the catalog as an admin reads it.

``openstack region list``, ``service list`` and ``endpoint list`` read these
(``keystone/catalog/core.py``'s Manager, ``keystone/api/regions.py``,
``services.py``, ``endpoints.py``). Upstream's defaults: any token may read the
regions (``identity:list_regions`` is ``""``); services and endpoints are for
admins (system readers upstream), so a member gets 403.

novalab's catalog is one table of endpoints carrying their service's id, type
and name; a service here is what those rows share. Endpoint URLs are returned
as stored, ``$(project_id)s`` templates included, as upstream does.
"""

from __future__ import annotations

from flask import Flask, jsonify, request
from sqlalchemy import select

from novalab.reference.common import exception
from novalab.reference.keystone.models import CatalogEndpoint, Region
from novalab.tracing.spans import upstream

CATALOG = "keystone/catalog/core.py"


def _link(kind: str, item_id: str) -> dict:
    return {"self": f"{request.host_url.rstrip('/')}/v3/{kind}/{item_id}"}


def region_view(row: Region) -> dict:
    return {"id": row.id, "description": row.description,
            "parent_region_id": row.parent_region_id, "links": _link("regions", row.id)}


def service_view(row: CatalogEndpoint) -> dict:
    return {"id": row.service_id, "type": row.service_type, "name": row.service_name,
            "enabled": True, "links": _link("services", row.service_id)}


def endpoint_view(row: CatalogEndpoint) -> dict:
    return {"id": row.id, "interface": row.interface, "region": row.region,
            "region_id": row.region, "service_id": row.service_id, "url": row.url,
            "enabled": True, "links": _link("endpoints", row.id)}


class CatalogAdmin:
    """Read the catalog's regions, services and endpoints (spans named as upstream's)."""

    def __init__(self, db, tracer):
        self.db = db
        self.tracer = tracer

    @upstream(CATALOG, "Manager.list_regions")
    def list_regions(self, parent_region_id: str | None = None) -> list[dict]:
        query = select(Region).order_by(Region.id)
        if parent_region_id is not None:
            query = query.where(Region.parent_region_id == parent_region_id)
        with self.db.session() as session:
            return [region_view(r) for r in session.scalars(query)]

    @upstream(CATALOG, "Manager.get_region")
    def get_region(self, region_id: str) -> dict:
        with self.db.session() as session:
            row = session.get(Region, region_id)
            if row is None:
                raise exception.NotFound(f"Could not find region: {region_id}.")
            return region_view(row)

    def _services(self) -> dict[str, CatalogEndpoint]:
        with self.db.session() as session:
            rows = session.scalars(select(CatalogEndpoint).order_by(CatalogEndpoint.service_type))
            services: dict[str, CatalogEndpoint] = {}
            for row in rows:
                services.setdefault(row.service_id, row)
                session.expunge(row)
            return services

    @upstream(CATALOG, "Manager.list_services")
    def list_services(self, service_type: str | None = None,
                      name: str | None = None) -> list[dict]:
        return [service_view(r) for r in self._services().values()
                if service_type in (None, r.service_type) and name in (None, r.service_name)]

    @upstream(CATALOG, "Manager.get_service")
    def get_service(self, service_id: str) -> dict:
        row = self._services().get(service_id)
        if row is None:
            raise exception.NotFound(f"Could not find service: {service_id}.")
        return service_view(row)

    @upstream(CATALOG, "Manager.list_endpoints")
    def list_endpoints(self, filters: dict[str, str]) -> list[dict]:
        query = select(CatalogEndpoint).order_by(CatalogEndpoint.service_type,
                                                 CatalogEndpoint.interface)
        for key, column in (("interface", CatalogEndpoint.interface),
                            ("service_id", CatalogEndpoint.service_id),
                            ("region_id", CatalogEndpoint.region)):
            if filters.get(key) is not None:
                query = query.where(column == filters[key])
        with self.db.session() as session:
            return [endpoint_view(r) for r in session.scalars(query)]

    @upstream(CATALOG, "Manager.get_endpoint")
    def get_endpoint(self, endpoint_id: str) -> dict:
        with self.db.session() as session:
            row = session.get(CatalogEndpoint, endpoint_id)
            if row is None:
                raise exception.NotFound(f"Could not find endpoint: {endpoint_id}.")
            return endpoint_view(row)


def register(app: Flask, catalog: CatalogAdmin, authorize) -> None:
    """Add the routes; ``authorize(action)`` checks the caller's token against policy."""

    def listing(key: str, items: list[dict]):
        return jsonify({key: items, "links": {"self": request.base_url, "previous": None,
                                              "next": None}})

    @app.get("/v3/regions")
    def list_regions():
        authorize("identity:list_regions")
        return listing("regions", catalog.list_regions(request.args.get("parent_region_id")))

    @app.get("/v3/regions/<region_id>")
    def get_region(region_id):
        authorize("identity:get_region")
        return jsonify({"region": catalog.get_region(region_id)})

    @app.get("/v3/services")
    def list_services():
        authorize("identity:list_services")
        return listing("services", catalog.list_services(request.args.get("type"),
                                                         request.args.get("name")))

    @app.get("/v3/services/<service_id>")
    def get_service(service_id):
        authorize("identity:get_service")
        return jsonify({"service": catalog.get_service(service_id)})

    @app.get("/v3/endpoints")
    def list_endpoints():
        authorize("identity:list_endpoints")
        return listing("endpoints", catalog.list_endpoints(
            {k: request.args.get(k) for k in ("interface", "service_id", "region_id")}))

    @app.get("/v3/endpoints/<endpoint_id>")
    def get_endpoint(endpoint_id):
        authorize("identity:get_endpoint")
        return jsonify({"endpoint": catalog.get_endpoint(endpoint_id)})
