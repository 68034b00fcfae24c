"""glance's service builder: the Image API on port key ``glance``.

Image bytes go to the Ceph object gateway when one runs (``w.urls["ceph-rgw"]``,
as user ``glance`` of the service project), else to files in the state
directory. The registry starts empty; a deployment uploads the first images.
"""

from __future__ import annotations

from novalab.reference.common.wiring import Wiring
from novalab.reference.glance import api as glance_api
from novalab.reference.glance.core import ImageRepo
from novalab.reference.glance.store import FileStore, RgwStore


def glance_api_service(w: Wiring) -> ImageRepo:
    service = "glance-api"
    auth = w.auth(service, "glance")
    if "ceph-rgw" in w.urls:
        store = RgwStore(w.urls["ceph-rgw"], w.http(service), auth.service_token)
    else:
        store = FileStore(w.config.state_dir / "glance" / "images", w.config.disk_reserve)
    images = ImageRepo(w.database(service), w.tracer(service), store)
    w.serve(glance_api.create_app(images, auth, tracer_provider=w.provider(service)),
            service, "glance")
    return images
