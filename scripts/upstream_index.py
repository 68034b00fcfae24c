"""Rebuild tracing/upstream_index.json: what exists in each upstream file novalab links to.

novalab's spans link to upstream code (``novalab.upstream.url``, see tracing/spans.py);
tests/tracing/test_upstream_links.py checks every link against the pinned list this
script writes. Rebuild it after adding a link to a file (or ref) the list lacks:

1. Get a git copy of each upstream repository the links name, with its tags:
   ``git clone --mirror https://opendev.org/openstack/nova DIR/nova.git`` (or from
   github.com/openstack/nova), likewise neutron, cinder, glance, keystone, and
   github.com/canonical/cloud-init.
2. ``.venv/bin/python scripts/upstream_index.py --mirrors DIR`` (a copy elsewhere:
   ``--mirror openstack/nova=PATH``).

For each (repository, ref, file) that a call to ``upstream(...)`` or
``code_attributes(...)`` in reference/** names (and each upstream URL constant there),
it reads the file at that ref (``git show <ref>:<path>``) and lists its functions and
classes with Python's ``ast`` (a Python 2 file, Grizzly's, by its indentation instead;
C++ by its ``Class::method(`` definitions). A repository with no copy here keeps its
entries from the current list (ceph/ceph, over 1 GB, has its few names checked by hand).
It then prints every link that points at nothing and exits 1 if there is one.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from novalab.tracing.upstream_index import INDEX_PATH, problem, source_links

ROOT = Path(__file__).resolve().parents[1]

_DEF = re.compile(r"^(\s*)(def|class)\s+(\w+)")
_CPP_DEF = re.compile(r"^(?:[\w:<>*&]+[ \t]+)*?(~?\w+(?:::~?\w+)+)\s*\(", re.M)


def python_names(source: str) -> list[str]:
    """Dotted names of every function and class, as ``__qualname__`` spells them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # Python 2 (``except X, e``): read the nesting from indentation
        return _indented_names(source)
    names = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                names.append(name)
                visit(child, name + (".<locals>." if not isinstance(child, ast.ClassDef)
                                     else "."))
            else:
                visit(child, prefix)

    visit(tree, "")
    return names


def _indented_names(source: str) -> list[str]:
    names, stack = [], []  # stack: (indent, name, kind)
    for line in source.splitlines():
        match = _DEF.match(line)
        if not match:
            continue
        indent, kind, name = len(match[1].expandtabs()), match[2], match[3]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = "".join(n + (".<locals>." if k == "def" else ".") for _, n, k in stack)
        names.append(prefix + name)
        stack.append((indent, name, kind))
    return names


def names_in(path: str, source: str) -> list[str]:
    if path.endswith(".py"):
        return sorted(set(python_names(source)))
    return sorted(set(_CPP_DEF.findall(source)))


def git(mirror: Path, *args: str) -> str | None:
    result = subprocess.run(["git", "--git-dir", str(mirror), *args],
                            capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def find_mirror(repo: str, given: dict[str, Path], mirrors: Path | None) -> Path | None:
    """``--mirror REPO=PATH``, else ``DIR/<name>.git``, ``DIR/<name>`` or
    ``DIR/<owner>+<name>/repo`` under ``--mirrors DIR``."""
    if repo in given:
        return given[repo]
    if mirrors is None:
        return None
    name = repo.split("/")[1]
    candidates = (f"{name}.git", name, f"{repo.replace('/', '+')}/repo")
    return next((mirrors / c for c in candidates if (mirrors / c).is_dir()), None)


def build(given: dict[str, Path], mirrors: Path | None, old: dict) -> dict:
    links, unresolved = source_links(ROOT)
    for line in unresolved:
        print(f"warning: {line}", file=sys.stderr)
    wanted = defaultdict(set)  # (repo, ref) -> paths
    for link in links:
        wanted[link.repo, link.ref].add(link.path)
    index: dict = {}
    for (repo, ref), paths in sorted(wanted.items()):
        mirror = find_mirror(repo, given, mirrors)
        if mirror is None:
            if ref in old.get(repo, {}):
                print(f"{repo}@{ref}: no copy here, keeping the pinned entries",
                      file=sys.stderr)
                index.setdefault(repo, {})[ref] = old[repo][ref]
            else:
                print(f"{repo}@{ref}: no copy here and nothing pinned", file=sys.stderr)
            continue
        commit = (git(mirror, "rev-parse", "--verify", f"{ref}^{{commit}}") or "").strip()
        if not commit:
            print(f"{repo}: no ref {ref} in {mirror}", file=sys.stderr)
            continue
        files = {}
        for path in sorted(paths):
            source = git(mirror, "show", f"{commit}:{path}")
            if source is not None:
                files[path] = names_in(path, source)
        index.setdefault(repo, {})[ref] = {"commit": commit, "files": files}
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", action="append", default=[], metavar="REPO=GITDIR",
                        help="a git copy of REPO (owner/name), e.g. openstack/nova=nova.git")
    parser.add_argument("--mirrors", type=Path, metavar="DIR",
                        help="where the git copies are, one per repository")
    parser.add_argument("--output", type=Path, default=INDEX_PATH)
    args = parser.parse_args(argv)
    given = {}
    for item in args.mirror:
        repo, _, path = item.partition("=")
        given[repo] = Path(path)
    old = json.loads(args.output.read_text()) if args.output.exists() else {}
    index = build(given, args.mirrors, old)
    args.output.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    problems = [p for link in source_links(ROOT)[0] if (p := problem(link, index))]
    for line in problems:
        print(line)
    print(f"wrote {args.output}; {len(problems)} links point at nothing",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
