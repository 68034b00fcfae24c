"""novalab's own units, handed to the deployment: the command line composes the product.

`serve` and `up` run OpenStack's services (``reference/deploy/services.py``,
``BUILDERS``) and two units that are novalab's: the lab service (``labs/service``)
and the trace page (``diagrams/web.py``). Both live above ``reference/deploy`` in
the layers (docs/architecture.md), so deploy cannot import them; :func:`install`
hands them in. The command line calls it as it starts, and so does the test suite
(``tests/conftest.py``), so a process that starts a cloud always knows every unit.

The builders import their modules only when a deployment starts them: a `novalab`
command that starts nothing does not pay for Flask.
"""

from __future__ import annotations

from novalab.reference.common.wiring import Wiring
from novalab.reference.deploy import processes, services

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
    services.register_builder(LAB_SERVICE, novalab_labs)
    processes.use_trace_page(trace_page)
