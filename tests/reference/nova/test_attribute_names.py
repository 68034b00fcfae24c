"""nova's services and the RPC layer spell no span attribute name themselves.

They write the constants of tracing/attributes.py, the names the diagram rules
read; tests/tracing/test_attributes.py holds the detector and checks the other
services, this test runs it over ``reference/nova`` and ``reference/rpc``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _detector():
    path = ROOT / "tests" / "tracing" / "test_attributes.py"
    spec = importlib.util.spec_from_file_location("novalab_attribute_detector", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.literal_names


def test_nova_and_rpc_spell_no_attribute_name_themselves():
    literal_names = _detector()
    files = sorted([*ROOT.glob("reference/nova/**/*.py"), *ROOT.glob("reference/rpc/**/*.py")])
    assert len(files) > 40
    offenders = [f"{path.relative_to(ROOT)}:{line}: {name!r}"
                 for path in files for line, _col, name in literal_names(path.read_text())]
    assert offenders == [], "use the constants of tracing/attributes.py:\n" + \
        "\n".join(offenders)
