"""``novalab trace list``: each boot's steps counted on the flow table the boot shows.

One trace store for the module holds two real boots: one on an embedded cloud
wired as today's Nova (``topology="modern"``), its spans written by the cloud's
own exporter into ``STATE/traces/``, and the recorded whole-cast classic boot
of ``tests/diagrams/fixtures/``, stored as the exporter writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from novalab.diagrams.flows import get_flow
from novalab.labs.cli import main
from novalab.reference.deploy.boot import BootRequest, boot
from novalab.reference.deploy.embedded import CloudConfig, EmbeddedCloud
from novalab.tracing.setup import Telemetry
from novalab.tracing.store import TraceStore

CLASSIC_BOOT = Path(__file__).parents[1] / "diagrams" / "fixtures" / "boot-whole-cast.otlp.json"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    state = tmp_path_factory.mktemp("trace-list") / "cloud"
    telemetry = Telemetry(memory=True, otlp=False, file_path=state / "traces" / "cloud.jsonl")
    with EmbeddedCloud(CloudConfig(state_dir=state, topology="modern"), telemetry) as cloud:
        result = boot(cloud, BootRequest(name="today"))
        assert result.active, result.server
    telemetry.shutdown()
    doc = json.loads(CLASSIC_BOOT.read_text())
    with open(state / "traces" / "recorded.jsonl", "w", encoding="utf-8") as out:
        out.write(json.dumps(doc, separators=(",", ":")) + "\n")
    return state


def _rows(state: Path) -> dict[str, dict]:
    listed = CliRunner().invoke(main, ["trace", "list", "--state-dir", str(state), "--json"])
    assert listed.exit_code == 0, listed.output
    return {row["servers"][0]["name"]: row for row in json.loads(listed.output)}


def test_each_boot_counts_the_steps_of_the_table_it_shows(store_dir):
    rows = _rows(store_dir)
    modern, classic = len(get_flow("modern").steps), len(get_flow("classic").steps)
    assert modern != classic
    assert (rows["today"]["steps"], rows["today"]["flow"]) == (f"{modern}/{modern}", "modern")
    assert (rows["demo-server"]["steps"], rows["demo-server"]["flow"]) == \
        (f"{classic}/{classic}", "classic")
    table = CliRunner().invoke(main, ["trace", "list", "--state-dir", str(store_dir)])
    assert table.exit_code == 0, table.output
    assert f"{modern}/{modern} modern" in table.output
    assert f"{classic}/{classic} classic" in table.output


def test_a_count_an_older_novalab_kept_on_the_classic_table_is_not_read(store_dir,
                                                                        monkeypatch):
    """Older versions kept "matched/58" for every boot in the index (kind ``steps``);
    the modern boot's count is made again, then read from the index."""
    store = TraceStore(store_dir).refresh()
    row = next(r for r in store.rows() if "today" in r.servers.values())
    store.remember([(row, "steps", "20/58")])
    modern = len(get_flow("modern").steps)
    assert _rows(store_dir)["today"]["steps"] == f"{modern}/{modern}"

    import novalab.diagrams.check as check_module

    def no_second_check(*_args, **_kwargs):
        raise AssertionError("the flow check ran again for an unchanged boot")

    monkeypatch.setattr(check_module, "check", no_second_check)
    again = _rows(store_dir)
    assert (again["today"]["steps"], again["today"]["flow"]) == (f"{modern}/{modern}", "modern")


# A name rich would read as markup ("[/]" closes nothing: rich raised MarkupError;
# "[red]" vanished) and as an emoji code; Nova takes it (printable characters).
ODD_NAME = "[/][red]vm:thumbs_up:"


@pytest.fixture(scope="module")
def odd_store(tmp_path_factory) -> Path:
    """Two recorded boots of a server named ``ODD_NAME`` (two servers, one name)."""
    state = tmp_path_factory.mktemp("odd-names") / "cloud"
    (state / "traces").mkdir(parents=True)
    text = CLASSIC_BOOT.read_text().replace('"demo-server"', json.dumps(ODD_NAME))
    again = text.replace("1a5021681120a24ed31f49053fa19835", "2b5021681120a24ed31f49053fa19835") \
        .replace("0f6693b2-817c-470a-ab35-29f126afd575", "1f6693b2-817c-470a-ab35-29f126afd575")
    with open(state / "traces" / "recorded.jsonl", "w", encoding="utf-8") as out:
        for doc in (text, again):
            out.write(json.dumps(json.loads(doc), separators=(",", ":")) + "\n")
    return state


@pytest.mark.parametrize("args", [
    ["trace", "list"], ["trace", "show", "--server", ODD_NAME],
    ["trace", "collect", "--trace-id", "1a5021681120a24ed31f49053fa19835", "-o", "{out}"]])
def test_user_strings_print_as_written(odd_store, tmp_path, args):
    """Issue 21, finding 15: a server named ``[/]`` made ``novalab trace list`` crash for
    everyone sharing the store; ``trace show``'s note (two boots of one name) and
    ``trace collect``'s hosts (a guest's host name is its server's name) print it too."""
    args = [a.replace("{out}", str(tmp_path / "trace.json")) for a in args]
    result = CliRunner().invoke(main, [*args, "--state-dir", str(odd_store)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert ODD_NAME in result.output
