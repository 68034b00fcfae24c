"""Nova's tables, trimmed to what a boot touches (``nova/db/main/models.py``).

Rows are soft-deleted as in Nova: ``deleted`` holds 0 while alive and the row id
once deleted, so a unique constraint can include it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from novalab.reference.common.db import Base, utcnow
from novalab.reference.common.quota import QuotaLimitColumns


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime, onupdate=utcnow)


class SoftDeleteMixin:
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)
    deleted: Mapped[int] = mapped_column(Integer, default=0)


class Instance(TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "instances"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, index=True)
    display_name: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    user_id: Mapped[str] = mapped_column(String(255))
    host: Mapped[str | None] = mapped_column(String(255))
    node: Mapped[str | None] = mapped_column(String(255))
    image_ref: Mapped[str | None] = mapped_column(String(255))
    flavor_id: Mapped[str] = mapped_column(String(255))
    flavor_name: Mapped[str] = mapped_column(String(255))
    memory_mb: Mapped[int] = mapped_column(Integer)
    vcpus: Mapped[int] = mapped_column(Integer)
    root_gb: Mapped[int] = mapped_column(Integer)
    ephemeral_gb: Mapped[int] = mapped_column(Integer, default=0)
    vm_state: Mapped[str] = mapped_column(String(255))
    task_state: Mapped[str | None] = mapped_column(String(255))
    power_state: Mapped[int] = mapped_column(Integer, default=0)
    key_name: Mapped[str | None] = mapped_column(String(255))
    # The key pair as it was at boot: its public key (served to the guest, EC2's
    # openssh-key) and, as upstream's ``instance_extra.keypairs``, the whole pair
    # (name, type, public key, fingerprint) for ``meta_data.json``'s ``keys``.
    key_data: Mapped[str | None] = mapped_column(Text)
    keypairs: Mapped[list | None] = mapped_column(JSON)
    user_data: Mapped[str | None] = mapped_column(Text)
    metadata_items: Mapped[dict] = mapped_column("metadata", JSON, default=dict)
    # Nova's instance_system_metadata rows, as one JSON object: what the services
    # keep about an instance for themselves (the image it booted from, and while
    # shelved: shelved_at, shelved_image_id, shelved_host). Never shown to users.
    system_metadata: Mapped[dict | None] = mapped_column(JSON, default=dict)
    availability_zone: Mapped[str | None] = mapped_column(String(255))
    launched_at: Mapped[datetime | None] = mapped_column(DateTime)
    terminated_at: Mapped[datetime | None] = mapped_column(DateTime)
    # What later microversions show (reference/nova/api/views.py): the description
    # (2.19), the lock (2.9; ``locked_by`` is "owner" or "admin"), and the extended
    # attributes of 2.3, set at create and by the compute host (root_device_name).
    display_description: Mapped[str | None] = mapped_column(Text)
    locked: Mapped[bool | None] = mapped_column(Boolean, default=False)
    locked_by: Mapped[str | None] = mapped_column(String(255))
    hostname: Mapped[str | None] = mapped_column(String(255))
    reservation_id: Mapped[str | None] = mapped_column(String(255))
    launch_index: Mapped[int | None] = mapped_column(Integer)
    kernel_id: Mapped[str | None] = mapped_column(String(255))
    ramdisk_id: Mapped[str | None] = mapped_column(String(255))
    root_device_name: Mapped[str | None] = mapped_column(String(255))
    # The flavor as it was at boot, extra specs included (upstream's
    # ``instance_extra.flavor``): 2.47 shows it, whatever happened to the flavor since.
    flavor: Mapped[dict | None] = mapped_column(JSON)
    # Loaded only when asked for (db/api.py ``expected_attrs``); reading them
    # unasked is a bug, not a silent extra query.
    tags: Mapped[list[Tag]] = relationship(
        primaryjoin="Instance.uuid == foreign(Tag.resource_id)", viewonly=True,
        lazy="raise", order_by="Tag.tag")

    @property
    def name(self) -> str:
        """The hypervisor's name for the guest: Nova's ``instance_name_template``."""
        return f"instance-{self.id:08x}"


class Flavor(TimestampMixin, Base):
    __tablename__ = "flavors"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    flavorid: Mapped[str] = mapped_column(String(255), unique=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    memory_mb: Mapped[int] = mapped_column(Integer)
    vcpus: Mapped[int] = mapped_column(Integer)
    root_gb: Mapped[int] = mapped_column(Integer)
    ephemeral_gb: Mapped[int] = mapped_column(Integer, default=0)
    swap: Mapped[int] = mapped_column(Integer, default=0)
    rxtx_factor: Mapped[float] = mapped_column(default=1.0)
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str | None] = mapped_column(Text)
    extra_specs: Mapped[list[FlavorExtraSpecs]] = relationship(
        viewonly=True, lazy="selectin", order_by="FlavorExtraSpecs.key")
    # Read only by os-flavor-access (access checks are SQL EXISTS on the table):
    # loaded when touched, not with every flavor a boot reads.
    projects: Mapped[list[FlavorProjects]] = relationship(
        viewonly=True, lazy="select", order_by="FlavorProjects.project_id")


class FlavorExtraSpecs(TimestampMixin, Base):
    """A flavor's extra specs, one key each (``flavor_extra_specs``); 2.61 shows them."""

    __tablename__ = "flavor_extra_specs"
    __table_args__ = (UniqueConstraint("flavor_id", "key",
                                       name="uniq_flavor_extra_specs0flavor_id0key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    flavor_id: Mapped[int] = mapped_column(Integer, ForeignKey("flavors.id"), index=True)
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str | None] = mapped_column(String(255))


class FlavorProjects(TimestampMixin, Base):
    """The projects a private flavor is for (``flavor_projects``, os-flavor-access)."""

    __tablename__ = "flavor_projects"
    __table_args__ = (UniqueConstraint("flavor_id", "project_id",
                                       name="uniq_flavor_projects0flavor_id0project_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    flavor_id: Mapped[int] = mapped_column(Integer, ForeignKey("flavors.id"))
    project_id: Mapped[str] = mapped_column(String(255))


class Tag(Base):
    """A server's tag (``tags``: resource_id is the instance's uuid); 2.26 shows them."""

    __tablename__ = "tags"

    resource_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tag: Mapped[str] = mapped_column(String(80), primary_key=True)


class ComputeNode(TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "compute_nodes"
    __table_args__ = (UniqueConstraint("host", "hypervisor_hostname", "deleted"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    host: Mapped[str] = mapped_column(String(255))
    hypervisor_hostname: Mapped[str] = mapped_column(String(255))
    hypervisor_type: Mapped[str] = mapped_column(String(255))
    hypervisor_version: Mapped[int] = mapped_column(Integer, default=0)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    local_gb: Mapped[int] = mapped_column(Integer)
    vcpus_used: Mapped[int] = mapped_column(Integer, default=0)
    memory_mb_used: Mapped[int] = mapped_column(Integer, default=0)
    local_gb_used: Mapped[int] = mapped_column(Integer, default=0)
    running_vms: Mapped[int] = mapped_column(Integer, default=0)
    cpu_info: Mapped[str] = mapped_column(Text, default="{}")
    supported_instances: Mapped[list] = mapped_column(JSON, default=list)
    cpu_allocation_ratio: Mapped[float] = mapped_column(default=16.0)
    ram_allocation_ratio: Mapped[float] = mapped_column(default=1.5)
    disk_allocation_ratio: Mapped[float] = mapped_column(default=1.0)


class Service(TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "services"
    __table_args__ = (UniqueConstraint("host", "binary", "deleted"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    host: Mapped[str] = mapped_column(String(255))
    binary: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str | None] = mapped_column(String(255))
    report_count: Mapped[int] = mapped_column(Integer, default=0)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled_reason: Mapped[str | None] = mapped_column(String(255))
    forced_down: Mapped[bool] = mapped_column(Boolean, default=False)
    last_seen_up: Mapped[datetime | None] = mapped_column(DateTime)


class InstanceFault(TimestampMixin, SoftDeleteMixin, Base):
    __tablename__ = "instance_faults"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), index=True)
    code: Mapped[int] = mapped_column(Integer)
    message: Mapped[str] = mapped_column(String(255))
    details: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(String(255))


class BlockDeviceMapping(TimestampMixin, SoftDeleteMixin, Base):
    """How a disk reaches an instance: from an image, a new or an existing volume."""

    __tablename__ = "block_device_mapping"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), index=True)
    source_type: Mapped[str] = mapped_column(String(255))
    destination_type: Mapped[str] = mapped_column(String(255))
    boot_index: Mapped[int | None] = mapped_column(Integer)
    device_name: Mapped[str | None] = mapped_column(String(255))
    image_id: Mapped[str | None] = mapped_column(String(36))
    volume_id: Mapped[str | None] = mapped_column(String(36))
    volume_size: Mapped[int | None] = mapped_column(Integer)
    delete_on_termination: Mapped[bool] = mapped_column(Boolean, default=False)
    attachment_id: Mapped[str | None] = mapped_column(String(36))
    connection_info: Mapped[dict | None] = mapped_column(JSON)


class InstanceInfoCache(TimestampMixin, SoftDeleteMixin, Base):
    """The instance's network info as Neutron last described it (what ``addresses`` shows)."""

    __tablename__ = "instance_info_caches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), unique=True, index=True)
    network_info: Mapped[list] = mapped_column(JSON, default=list)


class InstanceAction(TimestampMixin, SoftDeleteMixin, Base):
    """One user request on one instance: ``create``, ``delete`` (``os-instance-actions``).

    Found by ``(instance_uuid, request_id)``: the request id the API answered with
    names the action, and every service that works on it for that request adds
    its events under it.
    """

    __tablename__ = "instance_actions"
    __table_args__ = (
        Index("instance_uuid_idx", "instance_uuid"),
        Index("request_id_idx", "request_id"),
        Index("instance_actions_instance_uuid_updated_at_idx", "instance_uuid", "updated_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    action: Mapped[str | None] = mapped_column(String(255))
    instance_uuid: Mapped[str | None] = mapped_column(String(36),
                                                      ForeignKey("instances.uuid"))
    request_id: Mapped[str | None] = mapped_column(String(255))
    user_id: Mapped[str | None] = mapped_column(String(255))
    project_id: Mapped[str | None] = mapped_column(String(255))
    start_time: Mapped[datetime | None] = mapped_column(DateTime, default=utcnow)
    finish_time: Mapped[datetime | None] = mapped_column(DateTime)
    message: Mapped[str | None] = mapped_column(String(255))


class InstanceActionEvent(TimestampMixin, SoftDeleteMixin, Base):
    """One step a service took for an action (``compute__do_build_and_run_instance``)."""

    __tablename__ = "instance_actions_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event: Mapped[str | None] = mapped_column(String(255))
    action_id: Mapped[int | None] = mapped_column(Integer, ForeignKey("instance_actions.id"))
    start_time: Mapped[datetime | None] = mapped_column(DateTime, default=utcnow)
    finish_time: Mapped[datetime | None] = mapped_column(DateTime)
    result: Mapped[str | None] = mapped_column(String(255))  # "Success" or "Error"
    traceback: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(String(255))
    details: Mapped[str | None] = mapped_column(Text)


class Quota(QuotaLimitColumns, Base):
    """A project's own limit for one resource (``instances``, ``cores``, ``ram``)."""

    __tablename__ = "quotas"
    __table_args__ = (UniqueConstraint("project_id", "resource",
                                       name="uniq_quotas0project_id0resource"),)
