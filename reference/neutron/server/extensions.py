"""What neutron-server has loaded, its agents API, and honest 404s for what it has not.

``GET /v2.0/extensions`` lists the API extensions whose resources and attributes
this server really serves (``neutron/api/extensions.py``); a client decides from
it what it may ask. ``GET /v2.0/agents`` (the ``agent`` extension) lists every
agent that has called ``report_state``, ``alive`` computed from its last
heartbeat; upstream's policy makes agents admin-only, and neutron's list
controller drops what policy hides, so a member gets an empty list and a 404
for one agent.

Routers and floating IPs belong to the ``router`` extension (the L3 service
plugin and its agent), which novalab does not load: their URLs answer as
neutron answers an unloaded extension's, a 404 naming the resource, and the
message says so and where the README lists what is left out.
"""

from __future__ import annotations

from flask import Flask, g, jsonify

from novalab.reference.common import validation
from novalab.reference.neutron import exceptions as n_exc
from novalab.reference.neutron.server import policy

# (alias, name, description, updated): neutron-lib's API definitions of what is served.
LOADED = [
    ("agent", "agent", "The agent management extension.", "2013-02-03T10:00:00-00:00"),
    ("binding", "Port Binding",
     "Expose port bindings of a virtual port to external application",
     "2014-02-03T10:00:00-00:00"),
    ("external-net", "Neutron external network",
     "Adds external network attribute to network resource.", "2013-01-14T10:00:00-00:00"),
    ("net-mtu", "Network MTU", "Provides MTU attribute for a network resource.",
     "2015-03-25T10:00:00-00:00"),
    ("project-id", "project_id field enabled",
     "Extension that indicates that project_id field is enabled.",
     "2016-09-09T09:09:09-09:09"),
    ("provider", "Provider Network", "Expose mapping of virtual networks to physical networks",
     "2012-09-07T10:00:00-00:00"),
    ("quotas", "Quota management support",
     "Expose functions for quotas management per project", "2012-07-29T10:00:00-00:00"),
    ("quota_details", "Quota details management support",
     "Expose functions for quotas usage statistics per project", "2017-02-10T10:00:00-00:00"),
    ("security-group", "security-group", "The security groups extension.",
     "2012-10-05T10:00:00-00:00"),
    ("stateful-security-group", "Stateful security group",
     "Indicates if the security group is stateful or not", "2019-11-26T09:00:00-00:00"),
    ("standard-attr-description", "standard-attr-description",
     "Extension to add descriptions to standard attributes", "2016-02-10T10:00:00-00:00"),
    ("standard-attr-revisions", "Resource revision numbers",
     "This extension will display the revision number of neutron resources.",
     "2016-04-11T10:00:00-00:00"),
    ("standard-attr-timestamp", "Resource timestamps",
     "Adds created_at and updated_at fields to all Neutron resources that have Neutron "
     "standard attributes.", "2016-09-12T10:00:00-00:00"),
]

# Collections of extensions novalab does not load: collection -> (resource, alias).
NOT_LOADED = {"routers": ("router", "router"), "floatingips": ("floatingip", "router")}
LEFT_OUT = "README.md, section 'Left out, on purpose'"


def extension_doc(alias: str, name: str, description: str, updated: str) -> dict:
    return {"alias": alias, "name": name, "description": description, "links": [],
            "updated": updated}


class HTTPNotFound(n_exc.NotFound):
    """What neutron answers for a collection no loaded extension serves: its 404 (type
    ``HTTPNotFound``), with the reason novalab has it so."""

    message = ("The resource could not be found: %(collection)s, the '%(alias)s' "
               "extension's, which novalab's neutron does not load (no L3 agent, so no "
               "routers and no floating IPs). See %(left_out)s.")


class AgentNotFound(n_exc.NotFound):
    message = "Agent %(id)s could not be found."


def register(app: Flask, plugin, fields, filters, extra_extensions=()) -> None:
    """Add ``/v2.0/extensions``, ``/v2.0/agents`` and the unloaded extensions' 404s.

    ``fields(item)`` trims an item to ``?fields=``, ``filters()`` reads the query's
    filters (the API module's helpers); ``extra_extensions`` are further ``(alias,
    name, description, updated)`` rows, for extensions registered elsewhere."""
    loaded = sorted([*LOADED, *extra_extensions])

    @app.get("/v2.0/extensions")
    def extensions():
        return jsonify({"extensions": [extension_doc(*row) for row in loaded]})

    @app.get("/v2.0/extensions/<alias>")
    def extension(alias):
        for row in loaded:
            if row[0] == alias:
                return jsonify({"extension": extension_doc(*row)})
        raise n_exc.NotFound(f"Extension with alias {alias} does not exist")

    @app.get("/v2.0/agents")
    def list_agents():
        if not policy.is_admin(g.context):   # get_agent is admin-only: hidden, not refused
            return jsonify({"agents": []})
        return jsonify({"agents": [fields(a) for a in plugin.agents.list_agents(filters())]})

    @app.get("/v2.0/agents/<agent_id>")
    def show_agent(agent_id):
        agent = plugin.agents.get_agent(agent_id) if policy.is_admin(g.context) else None
        if agent is None:
            raise AgentNotFound(id=agent_id)
        return jsonify({"agent": fields(agent)})

    @validation.raw_body("an unloaded extension's URL: answered 404 before any body is read")
    def not_loaded(collection, rest=None):
        _resource, alias = NOT_LOADED[collection]
        raise HTTPNotFound(collection=collection, alias=alias, left_out=LEFT_OUT)

    methods = ["GET", "POST", "PUT", "DELETE"]
    for collection in NOT_LOADED:
        app.add_url_rule(f"/v2.0/{collection}", f"{collection}_not_loaded", not_loaded,
                         methods=methods, defaults={"collection": collection})
        app.add_url_rule(f"/v2.0/{collection}/<path:rest>", f"{collection}_item_not_loaded",
                         not_loaded, methods=methods, defaults={"collection": collection})
