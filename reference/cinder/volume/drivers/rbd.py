"""The RBD volume driver (``cinder/volume/drivers/rbd.py``): one RBD image per volume.

A volume ``<id>`` is the image ``volume-<id>`` in the ``volumes`` pool, created
at its full size: RBD images are thin, so a 1 GiB volume costs a header and
directory entry until someone writes to it. Nothing is exported: a hypervisor
reaches the image itself through librbd, so ``initialize_connection`` only says
where the cluster's monitors are and what the image is called, and Nova turns
that ``connection_info`` into a libvirt network disk (``docs/cinder.md``).

Like upstream's ``RADOSClient``, each operation opens its own cluster
connection: it fetches the cluster map from the monitor, then talks to the OSDs
directly, and both show in the trace as CLIENT spans of cinder-volume.

A snapshot ``<id>`` is the RBD snapshot ``snapshot-<id>`` of its volume's image
(``create_snapshot``); an image with snapshots cannot be removed, which is why
Cinder refuses to delete a volume that has some.

Left out: CephX (``auth_enabled`` is false, no secret), clones and protected
snapshots (so no copy-on-write clone of a glance image in rbd; the bytes are copied),
the image volume cache, replication, QoS, trash and flatten.
"""

from __future__ import annotations

import logging

from novalab.reference.ceph import errors as rados_errors
from novalab.reference.ceph import rbd
from novalab.reference.ceph.auth import CephX
from novalab.reference.ceph.rados import Rados
from novalab.reference.cinder import exception
from novalab.tracing.spans import upstream

LOG = logging.getLogger(__name__)

GiB = 1024 ** 3
PATH = "cinder/volume/drivers/rbd.py"


class RADOSClient:
    """A connection to the cluster and an I/O context on the driver's pool, for one job."""

    def __init__(self, driver: RBDDriver):
        self.driver = driver
        self.cluster: Rados | None = None
        self.ioctx = None

    def __enter__(self) -> RADOSClient:
        self.cluster = Rados(self.driver.mon_address, self.driver.tracer,
                             auth=self.driver.auth)
        try:
            self.cluster.connect()
            self.ioctx = self.cluster.open_ioctx(self.driver.pool)
        except rados_errors.Error as exc:
            self.cluster.shutdown()
            raise exception.VolumeBackendAPIException(
                data=f"Error connecting to ceph cluster (pool {self.driver.pool}): {exc}") from exc
        return self

    def __exit__(self, *exc) -> None:
        self.cluster.shutdown()


class RBDDriver:
    """Volumes as RBD images in one pool of one cluster."""

    VERSION = "1.2.0"
    storage_protocol = "ceph"

    def __init__(self, mon_address: str, tracer, *, pool: str = "volumes",
                 cluster_name: str = "ceph", backend_name: str = "ceph",
                 auth: CephX | None = None):
        self.mon_address = mon_address
        self.auth = auth  # rbd_user's key, from the keyring (upstream: rbd_keyring_conf)
        self.tracer = tracer
        self.pool = pool
        self.cluster_name = cluster_name
        self.backend_name = backend_name

    # Set-up -----------------------------------------------------------------------------

    @upstream(PATH, "RBDDriver.check_for_setup_error")
    def check_for_setup_error(self) -> None:
        """Fail start-up when the cluster or the pool cannot be reached."""
        with RADOSClient(self):
            pass

    # Volumes ----------------------------------------------------------------------------

    @upstream(PATH, "RBDDriver.create_volume")
    def create_volume(self, volume: dict) -> dict:
        """Create the thin image ``volume-<id>`` of the volume's size."""
        with RADOSClient(self) as client:
            try:
                rbd.RBD().create(client.ioctx, volume["name"], volume["size"] * GiB)
            except rados_errors.Error as exc:
                raise exception.VolumeBackendAPIException(
                    data=f"create of {volume['name']} failed: {exc}") from exc
        return {}

    @upstream(PATH, "RBDDriver.delete_volume")
    def delete_volume(self, volume: dict) -> None:
        """Remove the image and its data objects; a missing image is already deleted."""
        with RADOSClient(self) as client:
            try:
                rbd.RBD().remove(client.ioctx, volume["name"])
            except rbd.ImageNotFound:
                LOG.info("volume %s no longer exists in backend", volume["name"])
            except rados_errors.Error as exc:
                raise exception.VolumeBackendAPIException(
                    data=f"delete of {volume['name']} failed: {exc}") from exc

    # Snapshots --------------------------------------------------------------------------

    @upstream(PATH, "RBDDriver.create_snapshot")
    def create_snapshot(self, snapshot: dict) -> None:
        """Snapshot the volume's image (``RBDVolumeProxy(volume).create_snap(name)``).
        Upstream also protects it, for clones; novalab makes no clones."""
        with RADOSClient(self) as client:
            try:
                with rbd.Image(client.ioctx, snapshot["volume_name"]) as image:
                    image.create_snap(snapshot["name"])
            except rados_errors.Error as exc:
                raise exception.VolumeBackendAPIException(
                    data=f"snapshot {snapshot['name']} of {snapshot['volume_name']} "
                         f"failed: {exc}") from exc

    @upstream(PATH, "RBDDriver.delete_snapshot")
    def delete_snapshot(self, snapshot: dict) -> None:
        """Remove the RBD snapshot; one already gone (or its image) is deleted already."""
        with RADOSClient(self) as client:
            try:
                with rbd.Image(client.ioctx, snapshot["volume_name"]) as image:
                    image.remove_snap(snapshot["name"])
            except rbd.ImageNotFound:
                LOG.info("snapshot %s no longer exists in backend", snapshot["name"])
            except rados_errors.Error as exc:
                raise exception.VolumeBackendAPIException(
                    data=f"delete of snapshot {snapshot['name']} failed: {exc}") from exc

    @upstream(PATH, "RBDDriver.copy_image_to_volume")
    def copy_image_to_volume(self, context, volume: dict, image_service, image_id: str,
                             image_meta: dict | None = None) -> None:
        """Download the image and write it at the start of the volume.

        Upstream fetches to a temporary file and ``rbd import``\\ s it, replacing the
        image; writing the verified bytes at offset 0 of the image gives the same
        volume without the temporary file.
        """
        data = image_service.download(context, image_id, image_meta)
        if len(data) > volume["size"] * GiB:
            raise exception.ImageUnacceptable(
                image_id=image_id, reason=f"{len(data)} bytes do not fit a "
                                          f"{volume['size']} GiB volume")
        with RADOSClient(self) as client:
            try:
                with rbd.Image(client.ioctx, volume["name"]) as image:
                    image.write(data, 0)
            except rados_errors.Error as exc:
                raise exception.ImageCopyFailure(reason=str(exc)) from exc

    # Connections ------------------------------------------------------------------------

    def validate_connector(self, connector: dict) -> None:
        """Any host with librbd can connect: RBD needs nothing from the connector."""

    def create_export(self, context, volume: dict, connector: dict) -> dict:
        """Nothing to export (an iSCSI driver would create a target here)."""
        return {}

    def remove_export(self, context, volume: dict) -> None:
        """Nothing was exported."""

    def _get_mon_addrs(self) -> tuple[list[str], list[str]]:
        """The monitors' hosts and ports, as strings (upstream parses ``mon dump``)."""
        with RADOSClient(self) as client:
            mons = client.cluster.cluster_map["mons"]
        hosts, ports = [], []
        for mon in mons:
            host, _, port = mon["addr"].rpartition(":")
            hosts.append(host)
            ports.append(port)
        return hosts, ports

    @upstream(PATH, "RBDDriver.initialize_connection")
    def initialize_connection(self, volume: dict, connector: dict) -> dict:
        """Where and what the volume is, in the shape Nova's libvirt driver reads."""
        hosts, ports = self._get_mon_addrs()
        return {
            "driver_volume_type": "rbd",
            "data": {
                "name": f"{self.pool}/{volume['name']}",
                "hosts": hosts,
                "ports": ports,
                "cluster_name": self.cluster_name,
                "auth_enabled": False,        # no CephX here
                "auth_username": None,
                "secret_type": "ceph",
                "secret_uuid": None,
                "volume_id": volume["id"],
                "discard": True,
            },
        }

    @upstream(PATH, "RBDDriver.terminate_connection")
    def terminate_connection(self, volume: dict, connector: dict | None, **kwargs) -> None:
        """Nothing to undo on the backend: the hypervisor closes its own librbd handle."""
