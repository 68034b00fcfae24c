"""Every Python package folder is listed for the wheel under the ``novalab`` root."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    listed = set(config["packages"])
    found = {package for package, folder in mapping.items() if (ROOT / folder).is_dir()}
    for package, folder in mapping.items():
        for directory in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            # A folder whose name is no Python identifier cannot be imported: it is data
            # loaded by path (a lab, labs/NN-name/), shipped as package data.
            if directory.is_dir() and "__pycache__" not in directory.parts and \
                    any(directory.glob("*.py")) and all(
                        part.isidentifier() for part in directory.relative_to(ROOT).parts):
                relative = directory.relative_to(ROOT / folder)
                found.add(".".join([package, *relative.parts]))
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - found == set(), "these listed packages have no folder"


def test_top_level_folders_stay_namespaces():
    """No __init__.py at the top: `import diagrams` must keep meaning the PyPI package."""
    for folder in ("reference", "tracing", "diagrams", "labs"):
        assert not (ROOT / folder / "__init__.py").exists()
