"""Layers that only look down (docs/decisions.md, issue 22).

    tracing                        knows no service
    reference.common, reference.rpc
    the projects                   keystone, glance, ceph, neutron, cinder, placement,
                                   nova, guest: one imports another only through that
                                   project's client modules (CLIENTS)
    reference.deploy               what runs where
    diagrams                       reads spans only
    labs                           the course, the CLI
    benchmarks

Every ``import`` statement of the package is read from the source: lazy ones inside
functions and ``TYPE_CHECKING`` blocks too (edges all the same), relative ones
resolved against their package. Modules named in strings (``importlib``, ``python
-m``) are not read: keep those pointing down by review. An import of a higher layer,
or of another project's internals, fails the test unless KNOWN lists it; KNOWN only
shrinks: an entry that no longer happens fails too, so whoever removes an edge
removes its line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tracing", "reference", "diagrams", "labs", "benchmarks")
BELOW_THE_PROJECTS = ("common", "rpc")

# What a project may import of another: what upstream ships as a client library
# (librados and librbd, python-*client), never a service's internals.
CLIENTS = {
    "novalab.reference.ceph.rados", "novalab.reference.ceph.rbd",
    "novalab.reference.ceph.errors", "novalab.reference.ceph.auth",
}

# Edges that run against the layers today, each with the change that ends it (issue 22).
# (importing module, imported module)
KNOWN = {
    # tracing reads the trace page through deploy's keystone client.
    ("novalab.tracing.remote", "novalab.reference.deploy.client"),
}


def layer(module: str) -> tuple[int, str] | None:
    """(rank, name) of a module of the package; None for anything else."""
    parts = module.split(".")
    if parts[0] != "novalab" or len(parts) < 2 or parts[1] not in PACKAGES:
        return None
    top = parts[1]
    if top == "tracing":
        return 0, "tracing"
    if top == "reference":
        if len(parts) < 3 or parts[2] in BELOW_THE_PROJECTS:
            return 1, "reference.common"
        if parts[2] == "deploy":
            return 3, "reference.deploy"
        return 2, f"reference.{parts[2]}"
    return {"diagrams": (4, "diagrams"), "labs": (5, "labs"),
            "benchmarks": (6, "benchmarks")}[top]


def _is_module(name: str) -> bool:
    """A module or a package (the top folders have no ``__init__.py``) of the tree."""
    parts = name.split(".")[1:]
    path = ROOT.joinpath(*parts)
    return bool(parts) and (path.with_suffix(".py").exists() or path.is_dir())


def imports(source: str, module: str = "") -> list[tuple[int, str]]:
    """(line, module) of every import in ``source`` (``module``'s, for relative ones);
    ``from package import module`` counts as an import of that module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package upward
                package = module.split(".")[:-node.level]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                name = f"{base}.{alias.name}"
                found.append((node.lineno, name if _is_module(name) else base))
    return found


def against_the_layers(module: str, source: str) -> list[tuple[int, str]]:
    """The imports of ``module`` that look up, or into another project's internals."""
    mine = layer(module)
    if mine is None:
        return []
    wrong = []
    for line, target in imports(source, module):
        theirs = layer(target)
        if theirs is None or theirs[1] == mine[1]:
            continue
        upward = theirs[0] > mine[0]
        sideways = theirs[0] == mine[0] == 2 and target not in CLIENTS
        if upward or sideways:
            wrong.append((line, target))
    return wrong


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["novalab", *parts])


def edges() -> dict[tuple[str, str], str]:
    """Every edge against the layers in the tree: {(module, target): where}."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = module_of(path)
            for line, target in against_the_layers(module, path.read_text(encoding="utf-8")):
                found.setdefault((module, target), f"{path.relative_to(ROOT)}:{line}")
    return found


def test_every_import_looks_down_or_is_a_known_edge_being_removed():
    found = edges()
    new = {edge: where for edge, where in found.items() if edge not in KNOWN}
    assert not new, "imports against the layers (see this file's docstring):\n" + "\n".join(
        f"  {where}: {module} imports {target}" for (module, target), where in new.items())
    gone = KNOWN - set(found)
    assert not gone, f"edges no longer there: remove them from KNOWN: {sorted(gone)}"


def test_a_planted_upward_import_is_caught():
    assert against_the_layers("novalab.tracing.store", "from novalab.labs import cli\n") == \
        [(1, "novalab.labs.cli")]
    lazy = "def f():\n    import novalab.reference.deploy.processes\n"
    assert against_the_layers("novalab.reference.common.db", lazy) == \
        [(2, "novalab.reference.deploy.processes")]
    # a project reaching into another's internals, and one using its client
    assert against_the_layers("novalab.reference.cinder.service",
                              "from novalab.reference.ceph.osd import OSD\n") == \
        [(1, "novalab.reference.ceph.osd")]
    assert against_the_layers("novalab.reference.cinder.service",
                              "from novalab.reference.ceph.rados import Rados\n") == []
    assert against_the_layers("novalab.labs.cli", "import novalab.tracing.store\n") == []
    # a package with no __init__.py, and a relative import
    assert against_the_layers("novalab.tracing.store", "from novalab import labs\n") == \
        [(1, "novalab.labs")]
    assert against_the_layers("novalab.reference.common.db",
                              "from ..deploy import processes\n") == \
        [(1, "novalab.reference.deploy.processes")]
