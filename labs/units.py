"""novalab's own units, handed to the deployment: the command line composes the product.

`serve` and `up` run OpenStack's services (``reference/deploy/services.py``,
``BUILDERS``) and two units that are novalab's: the lab service (``labs/service``)
and the trace page (``diagrams/web.py``). Both live above ``reference/deploy`` in
the layers (docs/architecture.md), so deploy cannot import them; :func:`install`
hands them in (``reference/deploy/own_units.py``). The command line calls it as it
starts, and so does the test suite (``tests/conftest.py``), so a process that
starts a cloud always knows every unit.

Nothing heavy is imported here or by :func:`install`: every `novalab` command runs
it, and the builders import their modules only when a deployment starts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from novalab.reference.deploy import own_units

if TYPE_CHECKING:
    from novalab.reference.common.wiring import Wiring

LAB_SERVICE = "novalab-labs"


def novalab_labs(w: Wiring) -> str:
    """novalab's own lab service (labs/service/): the course graded inside the cloud.
    The deployment puts it in the catalog (``services.register_endpoints``)."""
    from novalab.labs.service.build import lab_service

    return lab_service(w)


def trace_page(state_dir, host: str, port: int, **options):
    """The trace page over ``state_dir``'s store (``diagrams.web.start``)."""
    from novalab.diagrams import web

    return web.start(state_dir, host, port, **options)


def install() -> None:
    """Register novalab's units with the deployment (idempotent)."""
    own_units.add_builder(LAB_SERVICE, novalab_labs)
    own_units.use_trace_page(trace_page)
