"""``GET /``: the version document (``placement/handlers/root.py``), served without a token.

One version, ``v1.0``, with the range of microversions this placement serves.
Clients read ``max_version`` to choose one (osc-placement asks ``GET /`` at the
version it wants and falls back to ``max_version`` on a 406).
"""

from __future__ import annotations

from novalab.reference.placement import microversion
from novalab.reference.placement.handlers import util
from novalab.tracing.spans import upstream


class RootHandler:
    def __init__(self, tracer):
        self.tracer = tracer

    @upstream("placement/handlers/root.py", "home")
    def home(self):
        minimum = microversion.fmt(microversion.MIN_VERSION)
        return util.send({"versions": [{
            "id": f"v{minimum}", "max_version": microversion.fmt(microversion.MAX_VERSION),
            "min_version": minimum, "status": "CURRENT",
            "links": [{"rel": "self", "href": ""}]}]})
