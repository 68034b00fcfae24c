"""The lab cloud as the runner sees it: what `describe` reads from a deployment's state."""

from __future__ import annotations

import json
import os

from novalab.labs.cloud import describe


def test_a_served_cloud_names_each_service_address(tmp_path):
    """Checks reach services outside keystone's catalog (nova-api-metadata, the metadata
    proxy) at the address the deployment wrote."""
    urls = {"keystone": "http://127.0.0.1:5000", "metadata": "http://127.0.0.1:8775"}
    (tmp_path / "cloud.json").write_text(json.dumps({
        "pid": os.getpid(), "password": "pw", "urls": urls,
        "os_env": {"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_USERNAME": "demo"}}))
    cloud = describe(tmp_path)
    assert cloud is not None and cloud.kind == "serve"
    assert cloud.urls == urls and cloud.auth_url == "http://127.0.0.1:5000/v3"


def test_a_cloud_that_is_not_running_is_none(tmp_path):
    (tmp_path / "cloud.json").write_text(json.dumps({"pid": 2 ** 22 + 7, "password": "pw",
                                                     "os_env": {}}))
    assert describe(tmp_path) is None
