"""``GET /resource_classes`` (1.2; ``placement/handlers/resource_class.py``): the
standard classes. Creating, renaming and deleting custom ``CUSTOM_*`` classes is
not served here (404)."""

from __future__ import annotations

from flask import g, request

from novalab.reference.placement import policy
from novalab.reference.placement.handlers import util
from novalab.reference.placement.objects import resource_class
from novalab.tracing.spans import upstream


class ResourceClassHandler:
    def __init__(self, tracer):
        self.tracer = tracer

    @upstream("placement/handlers/resource_class.py", "list_resource_classes")
    def list_resource_classes(self):
        policy.authorize(g.context, "placement:resource_classes:list")
        return util.send({"resource_classes": [
            {"name": name, "links": [{"rel": "self",
                                      "href": f"{request.script_root}/resource_classes/"
                                              f"{name}"}]}
            for name in resource_class.get_all()]})
