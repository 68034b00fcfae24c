"""A learner whose machine account cannot read the cloud's files reads their own traces
through the trace page, with their OS_* variables; never a classmate's."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from novalab.diagrams import web
from novalab.labs.cli import main
from novalab.reference.common.credentials import PERSONA_PASSWORD
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """A cloud as `serve` runs it: its trace store, its page (with a login) in the catalog,
    and one boot each of demo and alt_demo."""
    state = tmp_path_factory.mktemp("remote") / "cloud"
    telemetry = Telemetry(file_path=state / "traces" / "serve.jsonl")
    with EmbeddedCloud(CloudConfig(state_dir=state), telemetry) as running:
        page = web.start(state, port=0, require_auth=True, auth_url=running.identity_url)
        running.keystone.register_endpoint("trace", "novalab-web", page.url)
        for user in ("demo", "alt_demo"):
            request = BootRequest(name=f"{user}-vm", username=user, project=user,
                                  volume_size=None)
            assert boot(running, request).server["status"] == "ACTIVE"
        yield running
        page.stop()
    telemetry.shutdown()


@pytest.fixture
def as_alt(cloud, monkeypatch, tmp_path):
    """alt_demo's shell on another account: OS_* set, no trace store of theirs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NOVALAB_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))  # no deployments known
    for key, value in {"OS_AUTH_URL": cloud.identity_url, "OS_USERNAME": "alt_demo",
                       "OS_PASSWORD": PERSONA_PASSWORD, "OS_PROJECT_NAME": "alt_demo",
                       "OS_USER_DOMAIN_ID": "default",
                       "OS_PROJECT_DOMAIN_ID": "default"}.items():
        monkeypatch.setenv(key, value)


def test_a_learner_checks_and_draws_their_own_boot_through_the_page(as_alt, tmp_path):
    checked = CliRunner().invoke(main, ["flow", "check", "--server", "alt_demo-vm"])
    assert checked.exit_code == 0, checked.output
    assert "out of order" in checked.output and "matched" in checked.output
    drawn = CliRunner().invoke(main, ["diagram", "--server", "alt_demo-vm", "--format",
                                      "html", "-o", str(tmp_path / "mine.html")])
    assert drawn.exit_code == 0, drawn.output
    assert (tmp_path / "mine.html").stat().st_size > 1000


def test_a_classmates_boot_is_not_there(as_alt):
    listed = CliRunner().invoke(main, ["trace", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert "alt_demo-vm" in listed.output and "demo-vm\"" not in \
        listed.output.replace("alt_demo-vm\"", "")
    theirs = CliRunner().invoke(main, ["trace", "show", "--server", "demo-vm",
                                       "--timeout", "1"])
    assert theirs.exit_code != 0 and "demo-vm" in theirs.output
