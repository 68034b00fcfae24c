"""The flavors resource (``nova/api/openstack/compute/flavors.py``): sizes to boot with."""

from __future__ import annotations

from flask import jsonify

from novalab.reference.common.db import Database
from novalab.reference.nova.api.servers import api_base
from novalab.reference.nova.api.views import flavor_view
from novalab.reference.nova.db import api as db_api


class FlavorsController:
    def __init__(self, db: Database):
        self.db = db

    def index(self):
        return jsonify({"flavors": [flavor_view(api_base(), f, detail=False)
                                    for f in db_api.flavor_get_all(self.db)]})

    def detail(self):
        return jsonify({"flavors": [flavor_view(api_base(), f, detail=True)
                                    for f in db_api.flavor_get_all(self.db)]})

    def show(self, flavor_id: str):
        flavor = db_api.flavor_get_by_flavor_id(self.db, flavor_id)
        return jsonify({"flavor": flavor_view(api_base(), flavor, detail=True)})


def register(app, controller: FlavorsController) -> None:
    app.add_url_rule("/v2.1/flavors", "flavors_index", controller.index)
    app.add_url_rule("/v2.1/flavors/detail", "flavors_detail", controller.detail)
    app.add_url_rule("/v2.1/flavors/<flavor_id>", "flavors_show", controller.show)
