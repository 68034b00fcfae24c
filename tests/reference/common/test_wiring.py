"""The service seam: every project builds on Wiring, which records what each serves."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from novalab.reference.common.wiring import CloudConfig, Wiring
from novalab.reference.deploy import services
from novalab.tracing.setup import Telemetry

REFERENCE = Path(__file__).resolve().parents[3] / "reference"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_project_imports_the_deployment():
    """deploy/ registers and runs services; the services never reach up into it."""
    upward = {str(path.relative_to(REFERENCE)): sorted(
                  name for name in _imports(path) if name.startswith("novalab.reference.deploy"))
              for path in REFERENCE.rglob("*.py") if path.parts[len(REFERENCE.parts)] != "deploy"}
    assert {path: names for path, names in upward.items() if names} == {}


def test_every_builder_is_its_projects():
    """An OpenStack service's builder lives in its project's ``service`` module. Two are
    the deployment's own: a compute host (``compute_host``: nova-compute with neutron's
    L2 agent and the guests' stand-ins, DevStack's layout) and novalab's lab service,
    which the command line hands in (``labs/units.py``)."""
    own = {"nova-compute": "novalab.reference.deploy.services",
           "novalab-labs": "novalab.labs.units"}  # handed in from above (labs/units.py)
    for name, builder in services.all_builders().items():
        module = getattr(builder, "__wrapped__", builder).__module__
        expected = own.get(name, f"novalab.reference.{name.split('-')[0]}.service")
        assert module == expected, (name, module)
    compute_host = services.BUILDERS["nova-compute"].__wrapped__
    assert compute_host is services.compute_host
    assert "nova_compute(" in inspect.getsource(compute_host)


class Endpoint:
    def ping(self, context):
        return "pong"


def test_rpc_servers_record_their_topics_on_any_exchange(tmp_path):
    telemetry = Telemetry(memory=True, otlp=False)
    w = Wiring(CloudConfig(state_dir=tmp_path), telemetry)
    try:
        tracer = w.tracer("test")
        nova = w.rpc_server("conductor", "ctl", [Endpoint()], tracer)
        neutron = w.rpc_server("q-plugin", "ctl", [Endpoint()], tracer, exchange="neutron",
                               stop_first=True)
        assert (nova.target.exchange, neutron.target.exchange) == ("nova", "neutron")
        assert w.topics == ["conductor.ctl", "q-plugin.ctl"]
    finally:
        w.close()
        telemetry.shutdown()


def test_the_state_dir_is_its_owners_only(tmp_path):
    """Issue 21, finding 10: a state dir made 0755 let any local user read the database,
    the instance files and the traces; one made by an older novalab is tightened."""
    made = CloudConfig(state_dir=tmp_path / "new").resolve().state_dir
    older = tmp_path / "older"
    older.mkdir(mode=0o755)
    older.chmod(0o755)
    CloudConfig(state_dir=older).resolve()
    assert [p.stat().st_mode & 0o777 for p in (made, older)] == [0o700, 0o700]
