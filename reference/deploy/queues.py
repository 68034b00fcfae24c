"""What novalab has in RabbitMQ: its exchanges and queues, with message counts.

oslo.messaging's topology as novalab declares it (see ``reference/rpc/amqp.py``):
a topic exchange per project (``nova``), a durable queue per topic
(``scheduler``, ``conductor``, ``compute``) and per topic and server
(``compute.compute-1``), and one exclusive ``reply_<uuid>`` queue per
connection for the answers to calls. Neutron's agents add ``q-*`` and
``dhcp_agent`` topics, cinder ``cinder-*``.

Two ways to ask the broker: the management API (``http://127.0.0.1:15672``,
when the ``rabbitmq_management`` plugin is enabled) or ``rabbitmqctl`` (needs
to run as root or the rabbitmq user, to read the Erlang cookie).
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass

import httpx

EXCHANGES = ("nova", "neutron", "cinder", "glance", "keystone", "openstack")
QUEUE_PATTERNS = ("scheduler", "scheduler.*", "conductor", "conductor.*", "compute",
                  "compute.*", "dhcp_agent", "dhcp_agent.*", "q-*", "cinder-*", "reply_*")


class QueuesUnavailable(Exception):
    """Neither the management API nor rabbitmqctl answered; the message says why."""


@dataclass
class Listing:
    source: str
    exchanges: list[dict]   # name, type, durable
    queues: list[dict]      # name, messages, consumers, durable


def is_novalab_queue(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in QUEUE_PATTERNS)


def _vhost(transport_url: str) -> str:
    path = urllib.parse.urlsplit(transport_url).path
    return urllib.parse.unquote(path[1:]) if len(path) > 1 else "/"


def _from_management(transport_url: str, api_url: str) -> Listing:
    parts = urllib.parse.urlsplit(transport_url)
    auth = (parts.username or "guest", parts.password or "guest")
    vhost = urllib.parse.quote(_vhost(transport_url), safe="")
    with httpx.Client(base_url=api_url, auth=auth, timeout=5) as client:
        queues = client.get(f"/api/queues/{vhost}")
        queues.raise_for_status()
        exchanges = client.get(f"/api/exchanges/{vhost}")
        exchanges.raise_for_status()
    return Listing(
        f"management API {api_url}",
        [{"name": e["name"], "type": e["type"], "durable": e["durable"]}
         for e in exchanges.json()],
        [{"name": q["name"], "messages": q.get("messages", 0), "consumers": q.get("consumers", 0),
          "durable": q["durable"]} for q in queues.json()])


def _rabbitmqctl(*args: str) -> list[list[str]]:
    result = subprocess.run(["rabbitmqctl", "-q", *args, "--no-table-headers"],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise QueuesUnavailable(f"`rabbitmqctl {args[0]}` failed (exit {result.returncode}): "
                                f"{detail[-1] if detail else 'no output'}. It needs root or "
                                "the rabbitmq user (it reads the Erlang cookie).")
    return [line.split("\t") for line in result.stdout.splitlines() if line.strip()]


def _from_rabbitmqctl(transport_url: str) -> Listing:
    if shutil.which("rabbitmqctl") is None:
        raise QueuesUnavailable("rabbitmqctl is not installed here and the management API "
                                "did not answer (enable it with `rabbitmq-plugins enable "
                                "rabbitmq_management`, or use deploy/compose.yaml)")
    vhost = _vhost(transport_url)
    queues = _rabbitmqctl("list_queues", "-p", vhost, "name", "messages", "consumers",
                          "durable")
    exchanges = _rabbitmqctl("list_exchanges", "-p", vhost, "name", "type", "durable")
    return Listing(
        "rabbitmqctl",
        [{"name": row[0], "type": row[1], "durable": row[2] == "true"}
         for row in exchanges if len(row) >= 3],
        [{"name": row[0], "messages": int(row[1]), "consumers": int(row[2]),
          "durable": row[3] == "true"} for row in queues if len(row) >= 4])


def list_queues(transport_url: str, *, api_url: str = "http://127.0.0.1:15672",
                everything: bool = False) -> Listing:
    """novalab's exchanges and queues (all of them with ``everything``), by either route."""
    try:
        listing = _from_management(transport_url, api_url)
    except httpx.HTTPError:
        listing = _from_rabbitmqctl(transport_url)
    if not everything:
        listing.exchanges = [e for e in listing.exchanges if e["name"] in EXCHANGES]
        listing.queues = [q for q in listing.queues if is_novalab_queue(q["name"])]
    listing.exchanges.sort(key=lambda e: e["name"])
    listing.queues.sort(key=lambda q: (q["name"].startswith("reply_"), q["name"]))
    return listing


def expected_consumers(topics: list[str]) -> dict[str, int]:
    """Consumers a deployment's RPC servers should account for: ``topic`` and ``topic.server``
    queues, one consumer per server (``topics`` as ready files list them: ``topic.server``)."""
    counts: dict[str, int] = {}
    for entry in topics:
        topic = entry.split(".", 1)[0]
        for queue in (topic, entry):
            counts[queue] = counts.get(queue, 0) + 1
    return counts


def foreign_consumers(transport_url: str, expected: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Queues with more consumers than ours: another cloud shares this broker and vhost.

    Its services would take a share of our messages (RabbitMQ hands a queue's
    messages to its consumers in turn), so builds would vanish into the other
    cloud. Asked with passive ``queue.declare``, which reports the consumer count.
    """
    import pika
    import pika.exceptions

    params = pika.URLParameters("amqp://" + transport_url.split("://", 1)[1])
    params.connection_attempts = 1
    found: dict[str, tuple[int, int]] = {}
    connection = pika.BlockingConnection(params)
    try:
        channel = connection.channel()
        for queue, ours in sorted(expected.items()):
            try:
                count = channel.queue_declare(queue, passive=True).method.consumer_count
            except pika.exceptions.ChannelClosedByBroker:  # no such queue
                channel = connection.channel()
                continue
            if count > ours:
                found[queue] = (count, ours)
    finally:
        connection.close()
    return found
