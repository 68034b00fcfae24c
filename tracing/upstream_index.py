"""Do novalab's upstream links point at code that is there? The pinned list and its checks.

Every traced function names the upstream function it stands for
(``code.function.name``) and links to its file (``novalab.upstream.url``, see
``spans.py``). Upstream moves code: ``nova/scheduler/filter_scheduler.py`` left
master in Xena, ``HostManager.get_all_host_states`` in Train. So
``upstream_index.json``, beside this module, pins what exists: for each
(repository, ref, file) novalab links to, the commit the ref named and the
functions and classes the file holds, as dotted ``Class.method`` names
(``Class.method.<locals>.inner`` for a nested function, as ``__qualname__``).
``scripts/upstream_index.py`` rebuilds it from upstream's git history; the tests
(``tests/tracing/test_upstream_links.py``) read it and need no network.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from novalab.tracing import attributes as attr
from novalab.tracing.spans import upstream_url

INDEX_PATH = Path(__file__).with_name("upstream_index.json")

# The two forms of link novalab writes: opendev's (spans.upstream_url) and GitHub's.
_URL = re.compile(r"https://(?:opendev\.org/(?P<od>[^/]+/[^/]+)/src/(?:branch|tag)/"
                  r"|github\.com/(?P<gh>[^/]+/[^/]+)/blob/)(?P<rest>.+)")

# Calls in reference/** whose arguments are (path, qualname, ref=...).
LINK_CALLS = {"upstream", "code_attributes"}


@dataclass(frozen=True)
class Link:
    """One place novalab points at: ``qualname`` in ``path`` of ``repo`` at ``ref``."""

    repo: str  # "openstack/nova", "ceph/ceph"
    ref: str  # "master", "grizzly-eol", "main"
    path: str
    qualname: str | None = None  # None: a link to the file only
    where: str = ""  # the novalab source that makes it, for messages


def load(path: Path = INDEX_PATH) -> dict:
    """``{repo: {ref: {"commit": ..., "files": {path: [names]}}}}``."""
    return json.loads(path.read_text())


def parse_url(url: str, index: dict) -> tuple[str, str, str] | None:
    """``(repo, ref, path)`` of an upstream link, the ref being one ``index`` knows
    (a branch such as ``stable/2023.1`` has a slash, so the URL alone is ambiguous)."""
    match = _URL.fullmatch(url)
    if not match:
        return None
    repo = match["od"] or match["gh"]
    rest = match["rest"]
    for ref in sorted(index.get(repo, {}), key=len, reverse=True):
        if rest.startswith(ref + "/"):
            return repo, ref, rest[len(ref) + 1:]
    ref, _, path = rest.partition("/")
    return repo, ref, path


def qualname_of(function: str, path: str) -> str:
    """``nova.compute.api.API.create`` in ``nova/compute/api.py`` -> ``API.create``
    (a name without the module prefix, C++'s ``RGWGetObj::execute``, stays as it is)."""
    module = path.rsplit(".", 1)[0].replace("/", ".") + "."
    return function.removeprefix(module)


def problem(link: Link, index: dict) -> str | None:
    """Why ``link`` points at nothing, or None when its file (and function) exist."""
    refs = index.get(link.repo)
    at = f"{link.repo}@{link.ref}:{link.path}"
    if refs is None:
        return f"{link.where}: {link.repo} is not in the pinned list"
    if link.ref not in refs:
        return f"{link.where}: ref {link.ref} of {link.repo} is not in the pinned list"
    names = refs[link.ref]["files"].get(link.path)
    if names is None:
        return f"{link.where}: {at} does not exist (or is not pinned)"
    if link.qualname is not None and link.qualname not in names:
        return f"{link.where}: {at} has no {link.qualname}"
    return None


def span_link(attributes: dict, index: dict, where: str) -> Link | str:
    """The link a span's ``code.*`` and ``novalab.upstream.url`` attributes make, or
    why they make none (an unknown URL form, a file path that is not the URL's)."""
    url = attributes[attr.UPSTREAM_URL]
    parsed = parse_url(url, index)
    if parsed is None:
        return f"{where}: {url} is no opendev or GitHub source link"
    repo, ref, path = parsed
    file_path = attributes.get(attr.CODE_FILE_PATH)
    if file_path is not None and file_path != path:
        return f"{where}: code.file.path {file_path} is not the linked {path}"
    function = attributes.get(attr.CODE_FUNCTION_NAME)
    return Link(repo, ref, path, function and qualname_of(function, path), where)


def _constants(tree: ast.Module) -> dict[str, object]:
    """A module's top-level ``NAME = literal`` constants."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


def _value(node: ast.expr, names: dict) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    raise ValueError(ast.unparse(node))


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _links(node: ast.AST, names: dict, where: str) -> list[Link]:
    """The links ``node`` makes: a call to ``upstream`` or ``code_attributes`` (with
    ``placement_ref``, a second link, the modern topology's), or a literal dict of
    ``attr.CODE_FUNCTION_NAME`` and ``attr.UPSTREAM_URL`` (cloud-init's ``READ_V2``,
    ceph's ``rgw_op``). ValueError names an argument that is neither a literal nor in
    ``names``."""
    if isinstance(node, ast.Call) and _call_name(node) in LINK_CALLS:
        path, qualname = (_value(arg, names) for arg in node.args[:2])
        keywords = {k.arg: k.value for k in node.keywords}
        refs = [_value(keywords["ref"], names) if "ref" in keywords else "master"]
        if "placement_ref" in keywords:
            refs.append(_value(keywords["placement_ref"], names))
        return [Link(parse_url(upstream_url(path, ref), {})[0], ref, path, qualname, where)
                for ref in refs]
    if isinstance(node, ast.Dict):
        keys = {key.attr: value for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Attribute)}
        if "CODE_FUNCTION_NAME" in keys and "UPSTREAM_URL" in keys:
            url = _value(keys["UPSTREAM_URL"], names)
            parsed = parse_url(url, {})
            if parsed is None:
                raise ValueError(url)
            repo, ref, path = parsed
            function = _value(keys["CODE_FUNCTION_NAME"], names)
            return [Link(repo, ref, path, qualname_of(function, path), where)]
    return []


def _callers(function: ast.FunctionDef, calls: list[ast.Call], names: dict):
    """``(line, names)`` for each call of ``function`` in its module: ``names`` with
    the call's literal arguments bound to the function's parameters."""
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    for call in calls:
        if _call_name(call) != function.name:
            continue
        positional = params[1:] if isinstance(call.func, ast.Attribute) and params[:1] in (
            ["self"], ["cls"]) else params
        pairs = [*zip(positional, call.args, strict=False),
                 *((k.arg, k.value) for k in call.keywords)]
        bound = dict(names)
        for param, arg in pairs:
            with contextlib.suppress(ValueError):
                bound[param] = _value(arg, names)
        yield call.lineno, bound


def _module_links(tree: ast.Module, relative: Path) -> tuple[list[Link], list[str]]:
    constants = _constants(tree)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    links, unresolved = [], []

    def visit(node: ast.AST, function: ast.FunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            where = f"{relative}:{getattr(child, 'lineno', 0)}"
            try:
                found = _links(child, constants, where)
            except ValueError as exc:
                # A helper's parameter (``_span(tracer, qualname)``): resolve it at
                # each call of the helper in this module.
                found = []
                for line, names in _callers(function, calls, constants) if function else ():
                    with contextlib.suppress(ValueError):
                        found.extend(_links(child, names, f"{relative}:{line}"))
                if not found:
                    unresolved.append(f"{where}: cannot read the link's argument {exc}")
            links.extend(found)
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            visit(child, inner)

    visit(tree, None)
    for name, value in constants.items():
        if isinstance(value, str) and _URL.fullmatch(value):
            repo, ref, path = parse_url(value, {})
            links.append(Link(repo, ref, path, None, f"{relative}: {name}"))
    return links, unresolved


def source_links(root: Path) -> tuple[list[Link], list[str]]:
    """Every link written in ``root/reference/**``: each ``upstream(...)`` and
    ``code_attributes(...)`` call and each literal dict of ``code.function.name`` and
    ``novalab.upstream.url`` (a function link), and each top-level string constant
    that is an upstream source URL (a file link). A helper that passes its own
    parameter on (``_span(tracer, qualname)``) is read at each of its calls. Also
    the links whose arguments could not be read."""
    links, unresolved = [], []
    for source in sorted((root / "reference").rglob("*.py")):
        found, bad = _module_links(ast.parse(source.read_text()), source.relative_to(root))
        links += found
        unresolved += bad
    return links, unresolved
