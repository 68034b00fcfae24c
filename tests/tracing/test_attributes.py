"""One attribute vocabulary: services write, and diagram rules read, tracing/attributes.py.

A name spelled out as a string in a service and again in a rule can drift apart
(``nova.volume.id`` here, ``nova.volume.ids`` there) and the rule silently stops
matching. These tests find attribute names written as string literals, with
Python's ``ast``, where spans are written or read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from novalab.tracing import attributes as attr

ROOT = Path(__file__).resolve().parents[2]

# Where spans are written (services, tracing helpers) or read (flows, diagrams).
CHECKED = (
    "reference/ceph/**/*.py", "reference/neutron/**/*.py", "reference/cinder/**/*.py",
    "reference/glance/**/*.py", "reference/keystone/**/*.py",
    "reference/guest/**/*.py", "reference/deploy/services.py", "reference/*/service.py",
    "tracing/libvirt.py", "tracing/spans.py", "tracing/http.py",
    "diagrams/flows/**/*.py", "diagrams/semantics.py", "diagrams/callgraph.py",
    "diagrams/sequence*.py", "diagrams/check.py", "diagrams/jaeger.py",
)

# An attribute name: a known namespace, a dot, lower-case words; whole strings only,
# so a URL ("https://...") is never one. A module path ("nova.image.") is flagged only
# in a name's place.
ATTRIBUTE_NAME = re.compile(
    r"(nova|novalab|neutron|cinder|ceph|glance|keystone|db|http|messaging|rpc|code|peer|"
    r"server|url|network|error|service|host|process|client|user_agent|otel|span|openstack)"
    r"\.[a-z_]+(\.[a-z_]+)*")

# Calls whose first argument is an attribute name: span.set_attribute(NAME, value),
# span.get(NAME) in the rules, mapping.get(NAME) on attributes.
NAME_FIRST = {"set_attribute", "get"}
# Every name tracing/attributes.py defines: spelled anywhere else, it is a second copy.
VOCABULARY = {value for key, value in vars(attr).items() if key.isupper()}


def literal_names(source: str) -> list[tuple[int, int, str]]:
    """(line, column, name) of each attribute name written as a literal.

    That is a literal where a name goes (a dict key, a subscript such as
    ``attributes["ceph.pool"]``, the left side of ``in`` / ``not in``, the first
    argument of ``set_attribute`` / ``.get``), or anywhere a name of the vocabulary
    (``CEPH_POOL = "ceph.pool"``: a local copy).
    """
    places: list[ast.AST | None] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in VOCABULARY:
            places.append(node)
        elif isinstance(node, ast.Dict):
            places += node.keys
        elif isinstance(node, ast.Subscript):
            places.append(node.slice)
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            places.append(node.left)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in NAME_FIRST and node.args:
            places.append(node.args[0])
    return sorted({(p.lineno, p.col_offset, p.value) for p in places
                   if isinstance(p, ast.Constant) and isinstance(p.value, str)
                   and ATTRIBUTE_NAME.fullmatch(p.value)})


def checked_files() -> list[Path]:
    files = {path for pattern in CHECKED for path in ROOT.glob(pattern)}
    return sorted(p for p in files
                  if p.name != "attributes.py" and "tests" not in p.relative_to(ROOT).parts)


def test_detector_finds_names_and_leaves_modules_and_urls_alone():
    source = '''
span.set_attribute("cinder.volume.id", volume_id)
span.add_event("device appeared", {"neutron.port.id": device})
attributes["ceph.pool"] = pool
if s.get("rpc.method") == "defineXML" and "host.name" not in resource:
    pass
CEPH_POOL = "ceph.pool"
MODULES = ("nova.image.", "nova.network.")
STANDIN = "novalab.reference.neutron.agent.linux.dnsmasq_standin"
URL = "https://opendev.org/openstack/nova.git"
span.set_attribute(attr.CINDER_VOLUME_ID, volume_id)
headers.get("X-Auth-Token")
version = {"id": "v3.0"}
'''
    assert [(line, name) for line, _col, name in literal_names(source)] == [
        (2, "cinder.volume.id"), (3, "neutron.port.id"), (4, "ceph.pool"), (5, "rpc.method"),
        (5, "host.name"), (7, "ceph.pool")]


def test_services_and_rules_spell_no_attribute_name_themselves():
    files = checked_files()
    assert len(files) > 40  # the globs still find the services and the rules
    offenders = [f"{path.relative_to(ROOT)}:{line}: {name!r}"
                 for path in files for line, _col, name in literal_names(path.read_text())]
    assert offenders == [], "use the constants of tracing/attributes.py:\n" + \
        "\n".join(offenders)


def test_each_name_and_each_value_is_defined_once():
    """Two constants for one name would let writers and readers drift apart again."""
    tree = ast.parse(Path(attr.__file__).read_text())
    names = [t.id for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    values = [getattr(attr, n) for n in names]
    assert len(values) == len(set(values)), sorted(v for v in values if values.count(v) > 1)
