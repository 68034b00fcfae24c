"""The plumbing every service is built from, and torn down with.

A service needs the same few things whether it runs in the embedded cloud or
as its own process: its tracer provider, a database engine, an RPC transport,
an HTTP client and maybe an HTTP server, all traced under its own name.
:class:`Wiring` makes them from one :class:`CloudConfig` and remembers each, so
``close()`` can stop everything in the right order, and what each serves (URLs,
RPC topics), so a deployment can say so. It also holds the cloud's fault knobs
(``w.faults``, over ``STATE_DIR/faults.json``, see ``reference/common/faults.py``),
which the builders hand to the services that can fail on purpose.

This is the seam upstream's ``nova/service.py`` ``Service.start`` is: every
project's ``service.py`` builds its services on it (``reference/<project>/
service.py``), and ``reference/deploy`` only chooses which to run, where. It sits
below every project, so no project imports the deployment.
"""

from __future__ import annotations

import functools
import logging
import socket
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from novalab.reference.common import diskspace

# keystonemiddleware is a library every service loads; novalab keeps its stand-in here.
from novalab.reference.common.auth_token import (
    TOKEN_CACHE_TIME,
    AuthProtocol,
    ServiceCredentials,
)
from novalab.reference.common.credentials import Credentials
from novalab.reference.common.db import Database
from novalab.reference.common.faults import Faults
from novalab.reference.common.metadata_secret import shared_secret
from novalab.reference.common.wsgi import ServerThread, stop_all
from novalab.reference.rpc import RPCServer, Target, get_transport
from novalab.tracing.http import http_client
from novalab.tracing.private import private_dir
from novalab.tracing.propagation import TrustedContext, context_key
from novalab.tracing.setup import Telemetry

LOG = logging.getLogger(__name__)

# The host the controller services say they run on (RPC servers, agents).
CONTROLLER = socket.gethostname()

# The standard ports of `novalab serve` and of one-process-per-service deployments,
# keyed as Wiring.urls is. Services that do not exist yet simply never bind theirs.
STANDARD_PORTS = {
    "keystone": 5000,
    "nova": 8774,
    "metadata": 8775,          # nova-api-metadata
    "cinder": 8776,
    "glance": 9292,
    "neutron": 9696,
    "placement": 8778,
    "metadata-proxy": 8780,    # neutron-metadata-proxy, standing for 169.254.169.254:80
    "ceph-mon": 6789,
    "ceph-rgw": 7480,
    "labs": 8790,              # novalab's lab service (labs/service/), `serve` only
}


@dataclass
class CloudConfig:
    """Where the cloud keeps its state and how its parts are wired."""

    state_dir: Path | None = None
    db_url: str | None = None
    transport_url: str | None = None
    libvirt_uri: str = "test:///default"
    computes: int = 1
    bind_host: str = "127.0.0.1"
    # The address other hosts reach this host's services at (the URLs that go into
    # the catalog and the ready files); None: bind_host. Differs from bind_host when
    # a service binds 0.0.0.0, or behind NAT.
    advertise_host: str | None = None
    # 0 picks a free port; `novalab serve` uses STANDARD_PORTS.
    ports: dict[str, int] = field(default_factory=dict)
    report_interval: float = 10.0
    # Seconds a service trusts a validated token before asking Keystone again
    # ([keystone_authtoken] token_cache_time; see common/auth_token.py for the default).
    token_cache_time: float = TOKEN_CACHE_TIME
    # Run Neutron (ports, DHCP, L2, metadata)? Without it servers get no ports, as
    # on a Nova without networking.
    network: bool = True
    # Seconds nova-compute waits for network-vif-plugged ([DEFAULT]
    # vif_plugging_timeout, 300 as upstream; 0: do not wait). A lab cloud that
    # drills the vif-plugged-timeout fault uses a few seconds.
    vif_plugging_timeout: float = 300.0
    # "embedded": every service in this process (boot, serve); "up": one process per
    # service. Faults that kill a process fire only on "up".
    deployment: str = "embedded"
    # "classic": the 58-step flow's wiring (no placement); "modern": today's Nova,
    # with placement (issue 11 builds the rest of it: API database, cells, the super
    # conductor).
    topology: str = "classic"
    # What the stores (glance's files, ceph's OSDs, so cinder's volumes) keep free on
    # their disk: they refuse a write that would leave less than this share of it or
    # this many bytes, the smaller (docs/security.md, "A full disk").
    disk_reserve_ratio: float = diskspace.RESERVE_RATIO
    disk_reserve_bytes: int = diskspace.RESERVE_BYTES
    _credentials: Credentials | None = field(default=None, init=False, repr=False,
                                             compare=False)

    @property
    def disk_reserve(self) -> diskspace.Reserve:
        return diskspace.Reserve(self.disk_reserve_ratio, self.disk_reserve_bytes)

    def resolve(self) -> CloudConfig:
        if self.state_dir is None:
            self.state_dir = Path(tempfile.mkdtemp(prefix="novalab-"))
        self.state_dir = private_dir(self.state_dir)  # 0700: its database, secrets, traces
        if self.db_url is None:
            self.db_url = f"sqlite:///{self.state_dir / 'novalab.db'}"
        if self.transport_url is None:
            # A broker of its own, so two clouds in one process never share queues.
            self.transport_url = f"memory:///{uuid.uuid4().hex}"
        return self

    @property
    def credentials(self) -> Credentials:
        """The deployment's passwords (STATE_DIR/credentials.json; see credentials.py)."""
        if self._credentials is None:
            self._credentials = Credentials.of(self.resolve().state_dir)
        return self._credentials


class Wiring:
    def __init__(self, config: CloudConfig, telemetry: Telemetry):
        self.config = config.resolve()
        self.telemetry = telemetry
        self.traced = telemetry.enabled
        self.faults = Faults(self.config.state_dir, deployment=self.config.deployment)
        self.urls: dict[str, str] = {}
        self.served: dict[str, str] = {}   # port key -> URL, of what this wiring serves
        self.topics: list[str] = []        # "topic.server" of each RPC server it runs
        self.databases: dict[str, Database] = {}
        self._servers: list[ServerThread] = []
        self._rpc_servers: list[RPCServer] = []
        self._transports = []
        self._http_clients = []
        self._on_stop: list[Callable[[], None]] = []

    # Tracing ---------------------------------------------------------------------------

    def provider(self, service: str, host: str | None = None):
        """The service's provider, or None when tracing is off (skip instrumentation)."""
        return self.telemetry.provider(service, host=host) if self.traced else None

    def tracer(self, service: str, host: str | None = None):
        return self.telemetry.tracer(service, "novalab.reference", host=host)

    # Plumbing --------------------------------------------------------------------------

    def database(self, service: str) -> Database:
        """The service's own engine (one per service, as separate processes have)."""
        if service not in self.databases:
            self.databases[service] = Database(self.config.db_url,
                                               tracer_provider=self.provider(service))
        return self.databases[service]

    def transport(self, url: str | None = None):
        """A connection to the broker (``url``: another one, such as a cell's)."""
        transport = get_transport(url or self.config.transport_url)
        if hasattr(transport, "faults"):  # the memory broker can be made unreachable
            transport.faults = self.faults
        self._transports.append(transport)
        return transport

    @functools.cached_property
    def metadata_secret(self) -> str:
        """The deployment's metadata secret (``metadata_secret.py``): the proxy signs
        with it, nova-api-metadata checks it, each guest's source address is keyed by it."""
        return shared_secret(self.config.state_dir)

    @functools.cached_property
    def trace_key(self) -> bytes:
        """The deployment's key for trace contexts: its services sign what they send, and
        join only what is signed (``tracing/propagation.py``)."""
        return context_key(self.metadata_secret)

    def http(self, service: str, host: str | None = None, local_address: str | None = None):
        client = http_client(self.provider(service, host), local_address=local_address,
                             trace_key=self.trace_key)
        self._http_clients.append(client)
        return client

    def serve(self, app, service: str, port_key: str) -> str:
        """Serve ``app`` and record its URL under ``port_key``; it joins the trace of
        a request only when the deployment's key signed its context."""
        if hasattr(app, "wsgi_app"):  # a Flask app stays one (tests read its url_map)
            app.wsgi_app = TrustedContext(app.wsgi_app, self.trace_key)
        else:
            app = TrustedContext(app, self.trace_key)
        server = ServerThread(app, self.config.bind_host, self.config.ports.get(port_key, 0),
                              name=service).start()
        self._servers.append(server)
        url = f"http://{self.config.advertise_host or server.host}:{server.port}"
        self.urls[port_key] = url
        self.served[port_key] = url
        return url

    def rpc_server(self, topic: str, server: str, endpoints: list, tracer, *,
                   exchange: str | None = None, stop_first: bool = False,
                   transport_url: str | None = None) -> RPCServer:
        """Consume ``topic`` and ``topic.server`` on ``exchange``.

        ``exchange`` defaults to ``nova``; neutron's server and agents use
        ``neutron``, as oslo.messaging's ``control_exchange`` sets it per project.
        ``stop_first``: stop and drain this server among the stop callbacks (before
        those registered earlier), for a service that must take no more messages
        before it tears down what they act on (a DHCP agent's dnsmasq); otherwise
        RPC servers stop after every callback has run (a compute host drains its
        builds, which still need RPC, first). ``transport_url``: a cell's broker.
        """
        target = Target(topic=topic, server=server) if exchange is None else \
            Target(topic=topic, server=server, exchange=exchange)
        rpc_server = RPCServer(self.transport(transport_url), target, endpoints,
                               tracer=tracer).start()
        if stop_first:
            def stop():
                rpc_server.stop()
                rpc_server.wait()

            self.on_stop(stop)
        else:
            self._rpc_servers.append(rpc_server)
        self.topics.append(f"{topic}.{server}")
        return rpc_server

    def auth(self, service: str, user: str, host: str | None = None) -> AuthProtocol:
        """keystonemiddleware for ``service``, validating as service user ``user``."""
        credentials = ServiceCredentials(self.urls["keystone"], user,
                                         lambda: self.config.credentials.password_for(user))
        return AuthProtocol(credentials, self.http(service, host),
                            cache_time=self.config.token_cache_time)

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` first thing in :meth:`close` (last registered, first run)."""
        self._on_stop.append(callback)

    # Teardown --------------------------------------------------------------------------

    def close(self) -> None:
        for callback in reversed(self._on_stop):
            try:
                callback()
            except Exception:
                LOG.exception("stop callback failed")
        stop_all(self._servers)
        for rpc_server in self._rpc_servers:
            rpc_server.stop()
        for rpc_server in self._rpc_servers:
            rpc_server.wait()
        for transport in self._transports:
            transport.close()
        for client in self._http_clients:
            client.close()
        for db in self.databases.values():
            db.dispose()
        for items in (self._on_stop, self._servers, self._rpc_servers, self._transports,
                      self._http_clients):
            items.clear()
        self.databases.clear()
