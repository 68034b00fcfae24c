"""keystone's service builder: the Identity API on port key ``keystone``.

It starts empty; a deployment bootstraps it (``keystone-manage bootstrap``, the
service users, the demo projects: ``reference/deploy/seed.py``) before any
other service asks it for a token.
"""

from __future__ import annotations

from novalab.reference.common.wiring import Wiring
from novalab.reference.keystone import api as keystone_api
from novalab.reference.keystone.core import Keystone


def keystone(w: Wiring) -> Keystone:
    core = Keystone(w.database("keystone"), w.tracer("keystone"), cache_tokens=True)
    w.serve(keystone_api.create_app(core, tracer_provider=w.provider("keystone")),
            "keystone", "keystone")
    return core
