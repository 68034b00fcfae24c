"""What a fresh cloud starts with: users and projects, flavors, the cirros image, networks.

The flavors are Nova's and DevStack's defaults; the users mirror DevStack's
``admin`` and ``demo`` plus one service user per API service, which
the auth middleware uses to validate user tokens. Their passwords are the
deployment's own (credentials.py), the personas' excepted.
"""

from __future__ import annotations

from novalab.reference.common.context import get_admin_context
from novalab.reference.common.credentials import PERSONAS, Credentials
from novalab.reference.common.db import Database
from novalab.reference.glance.core import ImageRepo
from novalab.reference.keystone.core import Keystone
from novalab.reference.neutron.seed import seed_project_network
from novalab.reference.neutron.server.plugin import Ml2Plugin
from novalab.reference.nova.db import api as db_api

USERS = {
    "admin": {"project": "admin", "roles": ["admin", "member", "reader"]},
    "demo": {"project": "demo", "roles": ["member", "reader"]},
    # The other personas a shared cloud must keep apart: someone who may only
    # look at demo's resources, and the member of a second project.
    "reader": {"project": "demo", "roles": ["reader"]},
    "alt_demo": {"project": "alt_demo", "roles": ["member", "reader"]},
    "nova": {"project": "service", "roles": ["service"]},
    "glance": {"project": "service", "roles": ["service"]},
    "neutron": {"project": "service", "roles": ["service"]},
    "cinder": {"project": "service", "roles": ["service"]},
    "placement": {"project": "service", "roles": ["service"]},
    "swift": {"project": "service", "roles": ["service"]},  # ceph-rgw's keystone user
    "labs": {"project": "service", "roles": ["service"]},  # the lab service (novalab's own)
}

FLAVORS = [
    {"flavorid": "42", "name": "m1.nano", "memory_mb": 64, "vcpus": 1, "root_gb": 1},
    {"flavorid": "1", "name": "m1.tiny", "memory_mb": 512, "vcpus": 1, "root_gb": 1},
    {"flavorid": "2", "name": "m1.small", "memory_mb": 2048, "vcpus": 1, "root_gb": 20},
]

# Each ordinary project's own network (name, range), as DevStack's ``private`` is
# demo's: not shared, so one project can exhaust only its own addresses. The
# ranges do not overlap; the projects a class adds take theirs after these.
NETWORKS = {
    "demo": ("private", "10.0.0.0/24"),
    "alt_demo": ("alt-private", "10.0.1.0/24"),
}

CIRROS = {
    "name": "cirros",
    "disk_format": "raw",
    "container_format": "bare",
    "status": "queued",
    "visibility": "public",
    "min_disk": 0,
    "min_ram": 0,
    "properties": {"hw_disk_bus": "virtio", "hw_vif_model": "virtio",
                   "os_distro": "cirros", "novalab_stand_in": "generated raw disk"},
}
CIRROS_SIZE = 1024 * 1024


def cirros_bytes() -> bytes:
    """The bytes of the seeded ``cirros`` image: a generated 1 MiB raw disk.

    No image can be downloaded here, and the test hypervisor boots nothing, so
    the image is a stand-in with a real shape: an MBR-signed first sector and a
    deterministic body, so every checksum is reproducible.
    """
    sector = b"novalab cirros stand-in: no operating system here.".ljust(510, b"\0")
    sector += b"\x55\xaa"
    body_size = CIRROS_SIZE - len(sector)
    body = (bytes(range(251)) * (body_size // 251 + 1))[:body_size]  # byte i is i % 251
    return sector + body


def seed_keystone(keystone: Keystone, credentials: Credentials) -> list[str]:
    """The users, projects and roles of :data:`USERS`, with the deployment's passwords
    (generated on first start, see credentials.py); returns who got a new password."""
    made = credentials.ensure(USERS)
    keystone.bootstrap({name: dict(spec, password=credentials.password_for(name))
                        for name, spec in USERS.items()},
                       reset_passwords=[name for name in USERS if name not in PERSONAS])
    return made


def first_credentials(credentials: Credentials) -> str | None:
    """Make the deployment's passwords before any service needs them; the admin's when
    it was made just now (for `serve` and `up` to print once), else None."""
    return credentials.admin if "admin" in credentials.ensure(USERS) else None


ADMIN_PASSWORD_NOTE = ("admin password: {password}  (shown once; `novalab credentials show "
                       "--state-dir {state_dir}` prints it again)")


def seed_flavors(db: Database) -> None:
    if db_api.flavor_get_all(db):
        return
    for flavor in FLAVORS:
        db_api.flavor_create(db, dict(flavor))


def _project_id(db: Database, name: str) -> str | None:
    """Project ``name``'s id, read from keystone's table (seeding is deployment work,
    as DevStack runs with admin credentials); None if keystone has not seeded it."""
    from sqlalchemy import select

    from novalab.reference.keystone.models import Project

    with db.session() as session:
        return session.scalars(select(Project.id).where(Project.name == name)).first()


def _admin_project_id(db: Database) -> str | None:
    """The admin project's id, as ``openstack image create`` by admin records it as owner."""
    return _project_id(db, "admin")


def seed_networks(core: Ml2Plugin) -> dict[str, dict]:
    """Each project of :data:`NETWORKS` its own network (``openstack network create
    --project demo private`` and its subnet, as DevStack does): ``{project: seeded}``."""
    seeded = {}
    for project, (name, cidr) in NETWORKS.items():
        project_id = _project_id(core.db, project)
        if project_id is not None:
            seeded[project] = seed_project_network(core, project_id, name, cidr)
    return seeded


def seed_images(repo: ImageRepo) -> dict:
    """Register and upload ``cirros`` once, as admin would with ``image create --public``:
    the image belongs to the admin project, so only admins may change or delete it."""
    owner = _admin_project_id(repo.db)
    existing = repo.find_by_name(CIRROS["name"])
    if existing and owner and existing["owner"] is None:
        repo.set_owner(existing["id"], owner)   # seeded before images had an owner
        existing["owner"] = owner
    if existing and existing["status"] == "active":
        return existing
    image = existing or repo.create(owner=owner, **CIRROS)
    return repo.upload(get_admin_context(), image["id"], cirros_bytes())


def discover_hosts(w, compute) -> None:
    """``nova-manage cell_v2 discover_hosts`` once a compute host is up (DevStack runs
    it after starting nova-compute): the host is mapped to cell1, so the super
    conductor can find the cell of a server scheduled there. Modern topology only."""
    if w.config.topology != "modern":
        return
    from opentelemetry.trace import NoOpTracer

    from novalab.reference.nova.cells import CellDatabases

    api = Database(w.config.db_url)  # the tool's own handle, not the service's
    cells = CellDatabases(api, NoOpTracer())
    try:
        cells.discover_hosts(None)
    finally:
        cells.dispose()
        api.dispose()


def seed_cells(w, conductor) -> None:
    """The modern topology's cells, as DevStack sets them up before nova starts:
    cell1's virtual host on the broker, cell0's database (created on the same
    server if missing, with the same schema as the main one) and ``nova-manage
    cell_v2 simple_cell_setup``. The classic
    topology has no cells: nothing to do."""
    if w.config.topology != "modern":
        return
    from novalab.reference.common.db import Base, create_db_engine
    from novalab.reference.deploy import migrations, preflight
    from novalab.reference.nova.cells import cell0_url, cell_transport_url, simple_cell_setup

    preflight.ensure_vhost(cell_transport_url(w.config.transport_url))
    url = cell0_url(w.config.db_url)
    preflight.ensure_database(url)
    if migrations.current(w.config.db_url) is not None:
        migrations.upgrade(url)  # a deployment's database is under Alembic: so is cell0's
    else:  # the embedded cloud's throwaway database was made with create_all
        engine = create_db_engine(url)
        try:
            Base.metadata.create_all(engine)
        finally:
            engine.dispose()
    simple_cell_setup(conductor.db, w.config.transport_url)
