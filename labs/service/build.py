"""The lab service's builder: ``novalab-labs`` on the port key ``labs`` (8790 on `serve`).

It validates tokens as its own service user ``labs``, acts as the cloud's admin
for what the labs set up (credentials.json: it runs inside the deployment) and
is in keystone's catalog as service type ``lab`` (`serve` registers it here, `up`
with every unit's URLs), so a learner's client finds it wherever it runs.
"""

from __future__ import annotations

from novalab.labs.cloud import Cloud
from novalab.labs.service.app import create_app
from novalab.labs.service.records import Records
from novalab.labs.service.runner import Runner
from novalab.reference.common.wiring import Wiring
from novalab.reference.keystone.core import Keystone

SERVICE = "novalab-labs"
PORT_KEY = "labs"
SERVICE_TYPE = "lab"


def lab_service(w: Wiring, keystone: Keystone | None = None) -> str:
    """Serve the lab API on ``w``'s cloud; returns its URL. With ``keystone`` (the
    embedded cloud's core), put it in the catalog too (`up` registers every unit's)."""
    cloud = Cloud("service", w.config.state_dir, {"OS_AUTH_URL": f"{w.urls['keystone']}/v3"},
                  urls=dict(w.urls))
    records = Records(w.database(SERVICE))
    url = w.serve(create_app(records, Runner(cloud), w.auth(SERVICE, "labs"),
                             tracer_provider=w.provider(SERVICE)), SERVICE, PORT_KEY)
    if keystone is not None:
        keystone.register_endpoint(SERVICE_TYPE, SERVICE, f"{url}/v1")
    return url
