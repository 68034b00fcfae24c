"""neutron's service builders: the server, the DHCP and L2 agents, the metadata proxy.

Start them in this order (each needs the URLs or RPC servers of those before):
``neutron_server`` (REST on port key ``neutron``, RPC on ``q-plugin`` and
``q-reports-plugin``), one ``neutron_dhcp_agent``, one ``neutron_l2_agent`` per
compute host (``deploy.services.compute_host`` starts it beside nova-compute), then
``neutron_metadata_proxy`` (port key ``metadata-proxy``), which forwards to
nova-api-metadata. Keystone must already run and know the ``neutron`` user.

Every RPC server here is on neutron's exchange (``neutron``), as oslo.messaging's
``control_exchange`` puts it upstream.
"""

from __future__ import annotations

from novalab.reference.common.wiring import CONTROLLER, Wiring
from novalab.reference.neutron import constants
from novalab.reference.neutron.agent.dhcp import agent as dhcp_agent
from novalab.reference.neutron.agent.l2 import agent as l2_agent
from novalab.reference.neutron.agent.metadata import proxy as metadata_proxy
from novalab.reference.neutron.agent.rpc import (
    PluginApi,
    PluginReportStateAPI,
    SecurityGroupServerRpcApi,
    StateReporter,
)
from novalab.reference.neutron.db import models as _models  # noqa: F401 (tables)
from novalab.reference.neutron.server import api as neutron_api
from novalab.reference.neutron.server.agents_db import AgentExtRpcCallback
from novalab.reference.neutron.server.notifiers import (
    AgentNotifierApi,
    DhcpAgentNotifyAPI,
    NovaNotifier,
)
from novalab.reference.neutron.server.plugin import Ml2Plugin
from novalab.reference.neutron.server.rpc import (
    DhcpRpcCallback,
    RpcCallbacks,
    SecurityGroupServerRpcCallback,
)
from novalab.reference.rpc import RPCServer


def _rpc_server(w: Wiring, topic: str, server: str, endpoints: list, tracer) -> RPCServer:
    """An RPC server on neutron's exchange, stopped and drained before what it drives."""
    return w.rpc_server(topic, server, endpoints, tracer, exchange=constants.EXCHANGE,
                        stop_first=True)


def neutron_server(w: Wiring, host: str = CONTROLLER) -> Ml2Plugin:
    """The API, the core plugin, its RPC endpoints and its notifiers (the networks a
    cloud starts with are the deployment's: ``deploy/seed.py``)."""
    service = "neutron-server"
    tracer = w.tracer(service)
    core = Ml2Plugin(w.database(service), tracer)
    core.faults = w.faults  # port-binding, vif-plugged-timeout
    auth = w.auth(service, "neutron")
    transport = w.transport()
    core.dhcp_notifier = DhcpAgentNotifyAPI(
        transport, tracer, lambda: core.agents.get_agents(constants.AGENT_TYPE_DHCP))
    core.l2_notifier = AgentNotifierApi(transport, tracer)
    core.nova_notifier = NovaNotifier(w.http(service), auth.service_token, w.urls, tracer)
    _rpc_server(w, constants.PLUGIN_TOPIC, host, [DhcpRpcCallback(core), RpcCallbacks(core),
                                                  SecurityGroupServerRpcCallback(core)],
                tracer)
    _rpc_server(w, constants.REPORTS_TOPIC, host,
                [AgentExtRpcCallback(w.database(service), tracer)], tracer)
    w.serve(neutron_api.create_app(core, auth, tracer_provider=w.provider(service)),
            service, "neutron")
    return core


def _report(w: Wiring, transport, tracer, state: dict) -> StateReporter:
    reporter = StateReporter(PluginReportStateAPI(transport, tracer), state,
                             w.config.report_interval)
    w.on_stop(reporter.stop)
    return reporter


def neutron_dhcp_agent(w: Wiring, host: str = CONTROLLER) -> dhcp_agent.DhcpAgent:
    """A DHCP agent: registers, serves every DHCP network with one dnsmasq each."""
    service = "neutron-dhcp-agent"
    tracer = w.tracer(service, host)
    transport = w.transport()
    agent = dhcp_agent.DhcpAgent(host, w.config.state_dir / "neutron" / host / "dhcp",
                                 dhcp_agent.DhcpPluginApi(transport, tracer, host), tracer)
    w.on_stop(agent.stop)  # runs last of the three: after the RPC server and the reports
    reporter = _report(w, transport, tracer, dhcp_agent.agent_state(host))
    _rpc_server(w, constants.DHCP_AGENT_TOPIC, host, [agent], tracer)
    reporter.start()
    agent.sync_state()
    return agent


def neutron_l2_agent(w: Wiring, host: str) -> l2_agent.L2Agent:
    """The L2 agent of compute host ``host``: its own libvirt connection to the same URI."""
    service = "neutron-l2-agent"
    tracer = w.tracer(service, host)
    transport = w.transport()
    manager = l2_agent.LibvirtBridgeManager(w.config.libvirt_uri, tracer)
    if w.config.libvirt_uri.startswith("test:///"):
        w.on_stop(manager.cleanup)  # the test hypervisor outlives the cloud in-process
    agent = l2_agent.L2Agent(host, manager, PluginApi(transport, tracer), tracer,
                             SecurityGroupServerRpcApi(transport, tracer))
    reporter = _report(w, transport, tracer, l2_agent.agent_state(host))
    _rpc_server(w, constants.PORT_UPDATE_TOPIC, host, [agent], tracer)
    _rpc_server(w, constants.PORT_DELETE_TOPIC, host, [agent], tracer)
    _rpc_server(w, constants.SECURITY_GROUP_UPDATE_TOPIC, host, [agent], tracer)
    # Registered last, so it runs before the RPC servers drain: no worker is left
    # waiting for a device that will never appear.
    w.on_stop(manager.stop)
    reporter.start()
    return agent


def neutron_metadata_proxy(w: Wiring) -> metadata_proxy.MetadataProxyHandler:
    """The address guests ask for metadata (standing for 169.254.169.254:80)."""
    service = "neutron-metadata-proxy"
    handler = metadata_proxy.MetadataProxyHandler(
        w.urls, w.http(service), w.auth(service, "neutron").service_token, w.tracer(service),
        w.metadata_secret)
    w.serve(metadata_proxy.create_app(handler, tracer_provider=w.provider(service)),
            service, "metadata-proxy")
    return handler


def agents_alive(core: Ml2Plugin) -> dict[str, list[str]]:
    """Which agents the server counts as alive, by type (a quick health view)."""
    return {kind: [a["host"] for a in core.agents.get_agents(kind)]
            for kind in (constants.AGENT_TYPE_DHCP, constants.AGENT_TYPE_L2)}


__all__ = ["neutron_server", "neutron_dhcp_agent", "neutron_l2_agent",
           "neutron_metadata_proxy"]
