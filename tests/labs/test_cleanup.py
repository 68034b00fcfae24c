"""`lab finish` removes what the learner made for the lab, and nothing of a classmate's.

Issue 21, finding 7: cleanup matched names by prefix, so learner ``demo``'s finish of
lab 00 (prefix ``lab00-demo``) also deleted ``lab00-demo2-vm``, learner ``demo2``'s.
"""

from __future__ import annotations

from types import SimpleNamespace

from novalab.labs import cleanup
from novalab.labs.course import find


class FakeApi:
    """The APIs as the learner's project sees them: two learners share it here."""

    def __init__(self):
        self.items = {
            "servers": [{"id": "s1", "name": "lab00-demo-vm", "user_id": "u-demo"},
                        {"id": "s2", "name": "lab00-demo2-vm", "user_id": "u-demo2"},
                        {"id": "s3", "name": "lab00-demo-vm", "user_id": "u-demo2"}],
            "volumes": [{"id": "v1", "name": "lab00-demo", "user_id": "u-demo",
                         "status": "available"},
                        {"id": "v2", "name": "lab00-demox", "user_id": "u-demo",
                         "status": "available"}],
            "images": [], "networks": [], "subnets": [], "ports": [],
            "keypairs": [{"name": "lab00-demo2-key"}]}
        self.deleted = []

    def get(self, service, path, **params):
        kind = {"/servers/detail": "servers", "/volumes/detail": "volumes",
                "/v2/images": "images", "/v2.0/networks": "networks",
                "/v2.0/subnets": "subnets", "/v2.0/ports": "ports"}.get(path)
        if path == "/os-keypairs":
            return {"keypairs": [{"keypair": k} for k in self.items["keypairs"]]}
        return {kind: [i for i in self.items[kind] if i["id"] not in self.deleted]}

    def request(self, method, service, path):
        assert method == "DELETE"
        self.deleted.append(path.rsplit("/", 1)[-1])


def test_finish_removes_the_learners_own_and_leaves_a_classmates():
    api = FakeApi()
    ctx = SimpleNamespace(lab=find("00"), user="demo", user_id="u-demo", api=api)
    removed = cleanup.remove_all(ctx)
    assert removed == {"servers": ["lab00-demo-vm"], "volumes": ["lab00-demo"]}
    assert api.deleted == ["s1", "v1"]
