"""Console URLs (``nova/api/openstack/compute/remote_consoles.py``): refused honestly.

``openstack console url show`` asks Nova for a URL of a console proxy (noVNC,
SPICE HTML5, the serial websocket proxy). novalab runs no console proxy, so every
console type is disabled, and Nova's answer for a disabled type is a 400
``Unavailable console type <type>.`` (``ConsoleTypeUnavailable``, raised on the
compute host when ``[vnc]``/``[spice]``/``[serial_console] enabled`` is false).
novalab answers it at the API, saying why:

    POST /v2.1/servers/{id}/action  {"os-getVNCConsole": {"type": "novnc"}}      (2.1-2.5)
    POST /v2.1/servers/{id}/action  {"os-getSPICEConsole": {"type": "spice-html5"}}
    POST /v2.1/servers/{id}/action  {"os-getSerialConsole": {"type": "serial"}}
    POST /v2.1/servers/{id}/remote-consoles
         {"remote_console": {"protocol": "vnc", "type": "novnc"}}                (2.6+)

The server is found and the policy checked first, as upstream, so another
project's server is still a 404 and a reader a 403. The serial console *log*
(``os-getConsoleOutput``, ``openstack console log show``) is real: see
``server_actions.py``.
"""

from __future__ import annotations

from flask import g

from novalab.reference.common import exception
from novalab.reference.common.wsgi import LEFT_OUT, json_body
from novalab.reference.nova import policy
from novalab.reference.nova.api import versions
from novalab.reference.nova.api.actions import action
from novalab.reference.nova.api.schemas import remote_consoles as schema
from novalab.reference.nova.compute.api import API as ComputeAPI
from novalab.tracing.spans import upstream

_CONSOLES = "nova/api/openstack/compute/remote_consoles.py"
RULE = "os_compute_api:os-remote-consoles"


class ConsoleTypeUnavailable(exception.Invalid):
    """``nova.exception.ConsoleTypeUnavailable``, with the reason novalab has it so."""

    msg_fmt = (f"Unavailable console type %(console_type)s. Console URLs need a console "
               f"proxy (noVNC, SPICE HTML5, the serial websocket proxy): {LEFT_OUT}.")


class RemoteConsolesController:
    def __init__(self, compute_api: ComputeAPI, tracer):
        self.compute_api = compute_api
        self.tracer = tracer

    def _refuse(self, server_id: str, console_type: str, policy_first: bool):
        """Below 2.6 the policy is checked before the server is found, from 2.6 after
        (with the server's project as the target), as upstream."""
        context = g.context
        if policy_first:
            policy.authorize(context, RULE, {"project_id": context.project_id})
        instance = self.compute_api.get(context, server_id)
        if not policy_first:
            policy.authorize(context, RULE, {"project_id": instance["project_id"]})
        raise ConsoleTypeUnavailable(console_type=console_type)

    @action("os-getVNCConsole", schema.get_vnc_console, max_version="2.5")
    @upstream(_CONSOLES, "RemoteConsolesController.get_vnc_console")
    def get_vnc_console(self, server_id: str, body: dict):
        self._refuse(server_id, body["os-getVNCConsole"]["type"], policy_first=True)

    @action("os-getSPICEConsole", schema.get_spice_console, max_version="2.5")
    @upstream(_CONSOLES, "RemoteConsolesController.get_spice_console")
    def get_spice_console(self, server_id: str, body: dict):
        self._refuse(server_id, body["os-getSPICEConsole"]["type"], policy_first=True)

    @action("os-getSerialConsole", schema.get_serial_console, max_version="2.5")
    @upstream(_CONSOLES, "RemoteConsolesController.get_serial_console")
    def get_serial_console(self, server_id: str, body: dict):
        self._refuse(server_id, body["os-getSerialConsole"]["type"], policy_first=True)

    @upstream(_CONSOLES, "RemoteConsolesController.create")
    def create(self, server_id: str):
        console = json_body()["remote_console"]  # checked against schema.CREATE
        # Removed console types are refused before the handler (as upstream).
        console_type = "rdp" if console["protocol"] == "rdp" else console["type"]
        self._refuse(server_id, console_type, policy_first=False)


def register(app, controller: RemoteConsolesController) -> None:
    app.add_url_rule("/v2.1/servers/<server_id>/remote-consoles", "remote_consoles_create",
                     versions.min_version("2.6")(versions.schemas(schema.CREATE)(
                         controller.create)), methods=["POST"])
