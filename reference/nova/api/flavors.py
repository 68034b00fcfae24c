"""The flavors resource (``nova/api/openstack/compute/flavors.py``): sizes to boot with.

``GET /flavors`` (id, name, links; ``description`` from 2.55), ``/flavors/detail``
and ``/flavors/{id}`` (the sizes too; ``extra_specs`` from 2.61, for those the
``os-flavor-extra-specs:index`` policy lets read them), and the extra specs on
their own (``flavors_extraspecs.py``), which is how a client below 2.61 reads them:

    GET /v2.1/flavors/{id}/os-extra_specs          {"extra_specs": {"hw:cpu_policy": ...}}
    GET /v2.1/flavors/{id}/os-extra_specs/{key}    {"hw:cpu_policy": "dedicated"}
"""

from __future__ import annotations

from flask import g, jsonify

from novalab.reference.common import exception
from novalab.reference.common.db import Database
from novalab.reference.nova import policy
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.servers import api_base
from novalab.reference.nova.api.views import flavor_view
from novalab.reference.nova.db import api as db_api


def _include_extra_specs() -> bool:
    return versions.is_supported("2.61") and policy.check(
        g.context, "os_compute_api:os-flavor-extra-specs:index")


class FlavorsController:
    def __init__(self, db: Database):
        self.db = db

    def index(self):
        return jsonify({"flavors": [flavor_view(api_base(), f, detail=False)
                                    for f in db_api.flavor_get_all(self.db)]})

    def detail(self):
        extra_specs = _include_extra_specs()
        return jsonify({"flavors": [flavor_view(api_base(), f, detail=True,
                                                show_extra_specs=extra_specs)
                                    for f in db_api.flavor_get_all(self.db)]})

    def show(self, flavor_id: str):
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id)
        return jsonify({"flavor": flavor_view(api_base(), flavor, detail=True,
                                              show_extra_specs=_include_extra_specs())})

    def extra_specs_index(self, flavor_id: str):
        policy.authorize(g.context, "os_compute_api:os-flavor-extra-specs:index")
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id)
        return jsonify({"extra_specs": flavor["extra_specs"]})

    def extra_specs_show(self, flavor_id: str, key: str):
        policy.authorize(g.context, "os_compute_api:os-flavor-extra-specs:show")
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id)
        if key not in flavor["extra_specs"]:
            raise exception.NotFound(
                f"Flavor {flavor_id} has no extra specs with key {key[:255]}.")
        return jsonify({key: flavor["extra_specs"][key]})


def register(app, controller: FlavorsController) -> None:
    app.add_url_rule("/v2.1/flavors", "flavors_index", controller.index)
    app.add_url_rule("/v2.1/flavors/detail", "flavors_detail", controller.detail)
    app.add_url_rule("/v2.1/flavors/<flavor_id>", "flavors_show", controller.show)
    app.add_url_rule("/v2.1/flavors/<flavor_id>/os-extra_specs", "flavors_extra_specs_index",
                     controller.extra_specs_index)
    app.add_url_rule("/v2.1/flavors/<flavor_id>/os-extra_specs/<key>",
                     "flavors_extra_specs_show", controller.extra_specs_show)
