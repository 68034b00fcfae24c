"""``POST /servers/{id}/action``: one URL, many actions, told apart by the body's one key.

Upstream's WSGI ``Resource`` collects the controller methods marked
``@wsgi.action("shelve")`` (``register_actions``); for a POST to ``action`` it
reads the body's only key (``action_peek``) and calls that action's method,
whose schema is checked first. novalab does the same with :func:`action` and
:class:`ActionResource`. An action novalab has no method for is a 400, the
answer Nova gives for an action it does not know ("There is no such action"),
saying that novalab leaves it out. To add actions, mark a controller's methods
and pass the controller to :func:`register`:

    @action("shelve", schema.shelve)
    @upstream(_SHELVE, "ShelveController._shelve")
    def _shelve(self, server_id: str, body: dict): ...   # answers 202
"""

from __future__ import annotations

from flask import Flask

from novalab.reference.common import exception, validation
from novalab.reference.common.wsgi import LEFT_OUT, NOT_FOUND, json_body
from novalab.reference.nova.api import versions

__all__ = ["LEFT_OUT", "action", "register"]


def action(name: str, body_schema: dict, min_version: str = "2.1",
           max_version: str | None = None):
    """Mark a controller method as the action ``name``, its body checked by ``body_schema``,
    there for microversions ``min_version`` to ``max_version`` (``@wsgi.api_version``)."""

    def decorate(method):
        method.wsgi_action = name
        method.action_schema = body_schema
        method.action_versions = (min_version, max_version)
        return method

    return decorate


def raise_http_conflict_for_instance_invalid_state(exc: exception.InstanceInvalidState,
                                                   action_name: str, server_id: str):
    """The 409 Nova answers, naming the action and the state (``api/openstack/common.py``)."""
    attr, state = exc.kwargs.get("attr"), exc.kwargs.get("state")
    if attr is not None:
        message = (f"Cannot '{action_name}' instance {server_id} while it is in "
                   f"{attr} {state}")
    else:
        message = f"Instance {server_id} is in an invalid state for '{action_name}'"
    raise exception.Conflict(message) from exc


class ActionResource:
    """The actions of some controllers, by name (upstream's ``Resource.wsgi_actions``)."""

    def __init__(self, *controllers):
        self.actions: dict[str, tuple] = {}
        for controller in controllers:
            self.register_actions(controller)

    def register_actions(self, controller) -> None:
        for name in dir(type(controller)):
            if isinstance(getattr(type(controller), name), property):
                continue  # not an action, and reading one may raise (sg_api without Neutron)
            method = getattr(controller, name)
            if callable(method) and hasattr(method, "wsgi_action"):
                self.actions[method.wsgi_action] = (
                    method, validation.validator_for(method.action_schema))

    @property
    def body_schema(self) -> dict:
        """Any action's body: what tests find on the route (and fuzz it with)."""
        return {"anyOf": [method.action_schema for method, _ in self.actions.values()]}

    def dispatch(self, server_id: str):
        """Pick the action by the body's only key (``action_peek``), check its body, run it."""
        body = json_body()
        if len(body) != 1:
            raise exception.ValidationError(detail="Malformed request body")
        (name,) = body
        if name not in self.actions:
            raise exception.ValidationError(
                detail=f"There is no such action: {name[:64]}. {LEFT_OUT}.")
        method, validator = self.actions[name]
        if not versions.is_supported(*method.action_versions):
            # VersionNotFoundForAPIMethod: a bare 404, "as if the method is simply not
            # implemented" (upstream's words).
            raise exception.NotFound(NOT_FOUND)
        validation.validate(body, validator)
        return method(server_id, body)


def register(app: Flask, *controllers) -> ActionResource:
    resource = ActionResource(*controllers)

    def server_action(server_id: str):
        return resource.dispatch(server_id)

    server_action.body_schema = resource.body_schema
    app.add_url_rule("/v2.1/servers/<server_id>/action", "servers_action", server_action,
                     methods=["POST"])
    return resource
