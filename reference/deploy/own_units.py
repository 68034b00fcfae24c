"""novalab's own units, handed to the deployment from above (``labs/units.py``).

`up` and `service` run the lab service and the trace page beside OpenStack's
services, but both live above deploy in the layers (docs/architecture.md). The
command line fills this registry as it starts; deploy reads it when it plans or
starts a unit. It imports nothing, so filling it costs a `novalab` command nothing.
"""

from __future__ import annotations

from collections.abc import Callable

# Builders of units that are not OpenStack's, started after every service, in order.
BUILDERS: dict[str, Callable] = {}
# ``start(state_dir, host, port, require_auth=, auth_url=)`` -> a running trace page.
trace_page: Callable | None = None


def add_builder(name: str, builder: Callable) -> None:
    BUILDERS[name] = builder


def use_trace_page(start: Callable) -> None:
    global trace_page
    trace_page = start
