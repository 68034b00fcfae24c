"""Reuse the networking cloud of the neutron tests (``tests/reference/neutron/conftest.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[2] / "neutron" / "conftest.py"
_spec = importlib.util.spec_from_file_location("novalab_tests_neutron_harness", _path)
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)

netcloud = _harness.netcloud
