"""Client side of the volume RPC API (``cinder/volume/rpcapi.py``).

Work on a volume goes to the ``cinder-volume`` service that owns it: the queue
``cinder-volume.<host>@<backend>``, taken from the volume's ``host``
(``<host>@<backend>#<pool>``). Creates and deletes are casts (the volume's status
tells the outcome); attachment work is a call, because the caller needs the
``connection_info`` back.

The scheduler is folded away: upstream, cinder-api casts ``create_volume`` to
cinder-scheduler, whose filters and weighers pick a backend and cast on to it.
Here cinder-api casts ``create_volume`` to the shared ``cinder-volume`` topic
queue, so the broker hands it to one running backend, and that backend writes
its own ``host`` into the volume. With one backend the outcome is the same; the
capacity filters are what is left out.
"""

from __future__ import annotations

from novalab.reference.rpc import RPCClient, Target
from novalab.tracing.spans import upstream

TOPIC = "cinder-volume"
PATH = "cinder/volume/rpcapi.py"


def extract_host(host: str) -> str:
    """``host@backend#pool`` -> ``host@backend``, the RPC server of the volume's backend
    (``cinder.volume.volume_utils.extract_host`` at its default level)."""
    return host.partition("#")[0]


class VolumeAPI:
    def __init__(self, transport, tracer, timeout: float = 60):
        self.tracer = tracer
        self.client = RPCClient(transport, Target(topic=TOPIC), tracer=tracer, timeout=timeout)

    def _backend(self, volume: dict) -> RPCClient:
        return self.client.prepare(server=extract_host(volume["host"]))

    @upstream(PATH, "VolumeAPI.create_volume")
    def create_volume(self, ctxt, volume: dict, request_spec: dict) -> None:
        """Cast to any backend (the folded scheduler: the topic queue picks one)."""
        self.client.cast(ctxt, "create_volume", volume_id=volume["id"],
                         request_spec=request_spec)

    @upstream(PATH, "VolumeAPI.delete_volume")
    def delete_volume(self, ctxt, volume: dict) -> None:
        self._backend(volume).cast(ctxt, "delete_volume", volume_id=volume["id"])

    @upstream(PATH, "VolumeAPI.attachment_update")
    def attachment_update(self, ctxt, volume: dict, connector: dict,
                          attachment_id: str) -> dict:
        return self._backend(volume).call(ctxt, "attachment_update", volume_id=volume["id"],
                                          connector=connector, attachment_id=attachment_id)

    @upstream(PATH, "VolumeAPI.attachment_delete")
    def attachment_delete(self, ctxt, attachment_id: str, volume: dict) -> None:
        self._backend(volume).call(ctxt, "attachment_delete", attachment_id=attachment_id,
                                   volume_id=volume["id"])

    @upstream(PATH, "VolumeAPI.create_snapshot")
    def create_snapshot(self, ctxt, volume: dict, snapshot: dict) -> None:
        """Cast to the backend that has the volume."""
        self._backend(volume).cast(ctxt, "create_snapshot", snapshot_id=snapshot["id"])

    @upstream(PATH, "VolumeAPI.delete_snapshot")
    def delete_snapshot(self, ctxt, volume: dict, snapshot: dict) -> None:
        self._backend(volume).cast(ctxt, "delete_snapshot", snapshot_id=snapshot["id"])
