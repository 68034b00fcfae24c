"""A RabbitMQ node and a PostgreSQL cluster of a test's own, for tests that break them.

A test that restarts the broker or the database must never touch the machine's
shared ones: other tests, the CI run and a developer's clouds use them. These
helpers start a private RabbitMQ node (its own epmd, node name, Erlang cookie,
config and Mnesia directory) and a private PostgreSQL cluster (``initdb`` into a
temporary directory, as the ``postgres`` user when we are root) on free ports, let
the test stop, kill and restart them, and always tear them down.

``network_namespace()`` moves the calling thread, and every process and thread it
starts afterwards, into a fresh network namespace with only ``lo``: there
``novalab up`` binds the standard ports (5000, 8774, ...) even while another cloud
holds them on the machine, and the private servers started inside are reachable
only from there.

Importable from test modules (``pythonpath = ["tests"]``), like ``loopback.py``;
a missing binary skips, or fails under ``NOVALAB_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import glob
import os
import pwd
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from loopback import port_open, unavailable

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0


# The network namespace -------------------------------------------------------------------


def _loopback_up() -> None:
    """``ip link set lo up``, as the ioctl it is (no iproute2 needed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


@contextlib.contextmanager
def network_namespace() -> Iterator[bool]:
    """Run the calling thread in a new network namespace whose ``lo`` is up.

    Namespaces belong to threads: from here on, this thread's sockets, and the
    threads and processes it starts, live in the new namespace; pytest's other
    threads, and processes started before, do not. On leaving, the thread goes
    back; the namespace goes away with the last process in it. Yields False, and
    changes nothing, where the kernel refuses (not root): the caller decides
    whether the machine's own loopback will do.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            yield False
            return
        try:
            _loopback_up()
            yield True
        finally:
            if libc.setns(original, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "cannot return to the original network "
                                                  "namespace")
    finally:
        os.close(original)


@contextlib.contextmanager
def own_standard_ports(who: str) -> Iterator[bool]:
    """The standard ports (5000, 8774, ...) for ``who`` alone, in a network namespace of
    its own (``network_namespace``): tests that each start ``novalab serve`` or a lab cloud
    run side by side (pytest-xdist) without one taking another's ports. Where the kernel
    refuses a namespace (not root), the machine's own loopback, if its ports are free.
    Only for clouds on the memory broker and SQLite: the machine's RabbitMQ and
    PostgreSQL are not reachable from the namespace."""
    from novalab.reference.common.wiring import STANDARD_PORTS

    with network_namespace() as isolated:
        busy = sorted(port for port in STANDARD_PORTS.values() if port_open(port))
        if busy:
            unavailable(f"standard ports {busy} are in use; {who} needs them")
        yield isolated


def ephemeral_ports() -> range:
    """The ports the kernel hands out as the local end of outgoing connections."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    return range(low, high + 1)


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1 of the current namespace, and
    below the ephemeral range: a server that restarts (a private RabbitMQ's listener,
    its distribution port and epmd; PostgreSQL) must find its port free again, and an
    outgoing connection made meanwhile (any of a cloud's services reconnecting) may
    take any port of that range as its own end."""
    below = range(20000, min(ephemeral_ports().start, 30000))
    for port in random.sample(below, 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port in {below.start}-{below.stop - 1}")


# One server process ----------------------------------------------------------------------


def _wait(what: str, ready, process: subprocess.Popen, log: Path,
          timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode} while "
                               f"starting; {log} ends with:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout:.0f} s; {log} ends with:\n"
                               f"{_tail(log)}")
        time.sleep(0.2)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _stop(process: subprocess.Popen | None, signum: int = signal.SIGTERM,
          timeout: float = STOP_TIMEOUT) -> None:
    """Signal the server, then its whole process group with SIGKILL if it lingers."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signum)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # start_new_session: its group is its pid
    process.wait(10)


# RabbitMQ --------------------------------------------------------------------------------


class PrivateRabbitMQ:
    """A RabbitMQ node of our own: ``start()``, ``stop()``, ``restart()``, ``url``.

    Every file the node reads or writes is under ``root``: its config (only our
    listener, so the machine's ``/etc/rabbitmq/rabbitmq.conf`` and its port 5672
    stay out of it), plugins file (none), Mnesia directory (durable queues survive
    ``restart()``), logs and Erlang cookie (``HOME``). Its own epmd on a free port
    keeps its node name out of the machine's epmd.
    """

    def __init__(self, root: Path, host: str = "127.0.0.1"):
        self.root = root
        self.host = host  # the AMQP listener's address (epmd and distribution stay on lo)
        self.port = free_port()
        self.node = f"novalab-{uuid.uuid4().hex[:8]}@localhost"
        self.log = root / "rabbitmq.log"
        self.server = self._server_script()
        self._epmd: subprocess.Popen | None = None
        self._process: subprocess.Popen | None = None
        root.mkdir(parents=True, exist_ok=True)
        # guest may log in from other hosts too when the node listens off loopback
        remote = "" if host == "127.0.0.1" else "loopback_users.guest = false\n"
        (root / "rabbitmq.conf").write_text(f"listeners.tcp.default = {host}:{self.port}\n"
                                            "disk_free_limit.absolute = 1MB\n" + remote)
        (root / "rabbitmq-env.conf").write_text("")
        (root / "enabled_plugins").write_text("[].\n")
        self.env = dict(
            os.environ, HOME=str(root), RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS=host, RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(free_port()), ERL_EPMD_PORT=str(free_port()),
            ERL_EPMD_ADDRESS="127.0.0.1",
            RABBITMQ_CONFIG_FILE=str(root / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(root / "advanced.config"),
            RABBITMQ_CONF_ENV_FILE=str(root / "rabbitmq-env.conf"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(root / "enabled_plugins"),
            RABBITMQ_MNESIA_BASE=str(root / "mnesia"), RABBITMQ_LOG_BASE=str(root / "log"),
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}")

    @staticmethod
    def _server_script() -> str:
        # The package's own script: /usr/sbin/rabbitmq-server switches to the
        # rabbitmq user, whose HOME (and cookie) is the machine node's.
        for candidate in ("/usr/lib/rabbitmq/bin/rabbitmq-server",
                          *sorted(glob.glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/"
                                            "rabbitmq-server"))):
            if os.access(candidate, os.X_OK):
                return candidate
        found = shutil.which("rabbitmq-server")
        if found is None or shutil.which("epmd") is None:
            unavailable("rabbitmq-server is not installed (apt-get install rabbitmq-server)")
        return found

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{self.host}:{self.port}/"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> PrivateRabbitMQ:
        if self._epmd is None or self._epmd.poll() is not None:
            self._epmd = subprocess.Popen(
                [shutil.which("epmd") or "epmd", "-port", self.env["ERL_EPMD_PORT"],
                 "-address", "127.0.0.1"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
        with open(self.log, "a") as log:
            self._process = subprocess.Popen([self.server], env=self.env, cwd=self.root,
                                             stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
        _wait(f"RabbitMQ node {self.node}", lambda: port_open(self.port, self.host),
              self._process,
              self.log)
        return self

    def ctl(self, *args: str) -> None:
        """Run ``rabbitmqctl ARGS`` against this node (its cookie, name and epmd)."""
        script = Path(self.server).with_name("rabbitmqctl")
        command = str(script) if os.access(script, os.X_OK) else \
            (shutil.which("rabbitmqctl") or "rabbitmqctl")
        done = subprocess.run([command, "-q", *args], env=self.env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, f"rabbitmqctl {' '.join(args)}: {done.stderr[-2000:]}"

    def add_vhost(self, vhost: str, user: str = "guest") -> None:
        """A virtual host ``user`` may use, as DevStack makes ``nova_cell1``."""
        self.ctl("add_vhost", vhost)
        self.ctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")

    def stop(self) -> None:
        """A clean stop (SIGTERM: ``rabbitmqctl stop``); clients see the connection close."""
        _stop(self._process)

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def close(self) -> None:
        self.stop()
        _stop(self._epmd)


@contextlib.contextmanager
def private_rabbitmq(root: Path | None = None,
                     host: str = "127.0.0.1") -> Iterator[PrivateRabbitMQ]:
    """A started private node, stopped (and its files removed) however the test ends;
    its AMQP listener on ``host``."""
    with contextlib.ExitStack() as stack:
        if root is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="novalab-mq-")))
        node = PrivateRabbitMQ(root, host)
        stack.callback(node.close)
        yield node.start()


# PostgreSQL ------------------------------------------------------------------------------


def _postgres_bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        unavailable("PostgreSQL's server binaries (initdb, postgres) are not installed "
                    "(apt-get install postgresql)")
    return Path(os.path.realpath(initdb)).parent


class PrivatePostgres:
    """A PostgreSQL cluster of our own: ``start()``, ``stop()``, ``restart()``, ``url(db)``.

    ``initdb`` makes it in a temporary directory, trust authentication on
    127.0.0.1 and a socket in the data directory; durability is off (fsync), it
    lives for one test. As root it runs as the ``postgres`` user, as postgres
    refuses to run as root.
    """

    def __init__(self, root: Path, host: str = "127.0.0.1"):
        self.root = root
        self.host = host  # listens on it and 127.0.0.1; trusts its subnets
        self.data = root / "data"
        self.log = root / "postgres.log"
        self.port = free_port()
        self.bindir = _postgres_bindir()
        self.user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        self._process: subprocess.Popen | None = None

    def _run_as(self) -> dict:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def init(self) -> PrivatePostgres:
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        subprocess.run([str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                        "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"],
                       check=True, capture_output=True, timeout=180, cwd=self.root,
                       **self._run_as())
        if self.host != "127.0.0.1":
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write("host all all samenet trust\n")  # the hosts on its subnets
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{database}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _accepts(self) -> bool:
        import psycopg

        try:
            psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                            dbname="postgres", connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            return False

    def start(self) -> PrivatePostgres:
        with open(self.log, "a") as log:
            if self.user is not None:
                os.chown(self.log, self.user.pw_uid, self.user.pw_gid)
            self._process = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port),
                 "-k", str(self.data), "-c",
                 f"listen_addresses={','.join(dict.fromkeys(['127.0.0.1', self.host]))}",
                 "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off", "-c", "max_connections=300"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.root, start_new_session=True, **self._run_as())
        _wait(f"PostgreSQL on port {self.port}", self._accepts, self._process, self.log)
        return self

    def stop(self) -> None:
        """A fast shutdown (SIGINT, ``pg_ctl stop -m fast``): every session is cut off."""
        _stop(self._process, signal.SIGINT)

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()


@contextlib.contextmanager
def private_postgres(host: str = "127.0.0.1") -> Iterator[PrivatePostgres]:
    """A started private cluster, stopped and removed however the test ends.

    Its directory is made under the system's temporary directory, not pytest's
    ``tmp_path``: as root the cluster runs as ``postgres``, who cannot enter
    root's private pytest directories.
    """
    with tempfile.TemporaryDirectory(prefix="novalab-pg-") as root:
        cluster = PrivatePostgres(Path(root), host)
        try:
            yield cluster.init().start()
        finally:
            cluster.stop()
