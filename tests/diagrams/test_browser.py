"""The pictures in a real browser: headless Chromium parses them and runs the page's script.

Chromium is Debian's ``chromium`` package; without it these tests skip, except
under ``NOVALAB_REQUIRE_SERVICES=1`` (CI), where they fail. The Mermaid check
also needs Mermaid's own parser, ``mermaid.min.js`` from the npm package
``mermaid``: point ``NOVALAB_MERMAID_JS`` at the file, or unpack it into the
repository as ``.cache/mermaid/package/dist/mermaid.min.js`` (``cd .cache/mermaid
&& npm pack mermaid@11 && tar xzf mermaid-*.tgz package/dist/mermaid.min.js``)
or ``node_modules/mermaid/dist``. Without it that test skips and says so.
"""

from __future__ import annotations

import html as html_lib
import os
import re
import subprocess
from pathlib import Path

import pytest

from novalab.diagrams import sequence
from novalab.diagrams.check import check
from novalab.diagrams.flows import get_flow

pytestmark = pytest.mark.e2e  # Chromium

ROOT = Path(__file__).resolve().parents[2]
FLOW = get_flow("classic")


def _chromium() -> str:
    import shutil

    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    reason = "chromium is not installed (Debian: apt-get install -y chromium)"
    if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def dump_dom(url: str, tmp_path: Path, budget_ms: int | None = None) -> str:
    """The DOM after load (and after ``budget_ms`` of virtual time for scripts)."""
    args = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}"]
    if budget_ms:
        args.append(f"--virtual-time-budget={budget_ms}")
    done = subprocess.run([*args, "--dump-dom", url], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _views(trace):
    return sequence.from_check(check(trace, FLOW))


@pytest.mark.parametrize("fixture, arrows", [("embedded_trace", 28),
                                             ("whole_cast_trace", 58),
                                             ("recorded_whole_cast_trace", 58)])
def test_svg_in_chromium(request, tmp_path, fixture, arrows):
    view = _views(request.getfixturevalue(fixture))
    path = tmp_path / "sequence.svg"
    path.write_text(sequence.render(view, "svg"))
    dom = dump_dom(path.as_uri(), tmp_path)
    assert "This page contains the following errors" not in dom
    assert len(re.findall(r'<g class="lifeline"', dom)) == 22
    assert len(re.findall(r'<g class="arrow[ "]', dom)) == arrows == len(view.arrows)


@pytest.mark.parametrize("fixture, arrows", [("embedded_trace", 28),
                                             ("whole_cast_trace", 58),
                                             ("recorded_whole_cast_trace", 58)])
def test_html_in_chromium(request, tmp_path, fixture, arrows):
    view = _views(request.getfixturevalue(fixture))
    path = tmp_path / "sequence.html"
    path.write_text(sequence.render(view, "html"))
    dom = dump_dom(path.as_uri(), tmp_path)
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ready="yes"' in body  # the page's script ran to the end
    assert 'data-lifelines="22"' in body
    assert f'data-arrows="{arrows}"' in body


def test_html_shows_a_steps_span_and_upstream_link(embedded_trace, tmp_path):
    path = tmp_path / "sequence.html"
    path.write_text(sequence.render(_views(embedded_trace), "html"))
    dom = dump_dom(path.as_uri() + "#step-4", tmp_path)
    details = re.search(r'<aside id="details">(.*?)</aside>', dom, re.S).group(1)
    assert "4. Start instance" in details
    assert "POST /v2.1/servers" in details and "nova-api" in details
    link = re.search(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', details)
    assert link.group(2) == "nova.api.openstack.compute.servers.ServersController.create"
    assert html_lib.unescape(link.group(1)) == \
        "https://opendev.org/openstack/nova/src/branch/master/nova/api/openstack/compute/" \
        "servers.py"
    assert 'class="arrow sync selected"' in dom


def _mermaid_js() -> Path | None:
    for candidate in (os.environ.get("NOVALAB_MERMAID_JS"),
                      ROOT / ".cache" / "mermaid" / "package" / "dist" / "mermaid.min.js",
                      ROOT / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def test_mermaid_parses_the_text(embedded_trace, whole_cast_trace, tmp_path):
    script = _mermaid_js()
    if script is None:
        pytest.skip("Mermaid's parser is not here: set NOVALAB_MERMAID_JS to mermaid.min.js, "
                    "or unpack it to .cache/mermaid/package/dist/ (npm pack mermaid@11). "
                    "mermaid-cli also works with the system chromium, but installs ~500 MB.")
    texts = [sequence.render(_views(embedded_trace), "mermaid"),
             sequence.render(sequence.from_trace(embedded_trace, FLOW), "mermaid"),
             sequence.render(_views(whole_cast_trace), "mermaid")]
    for n, text in enumerate(texts):
        page = tmp_path / f"parse{n}.html"
        page.write_text(
            f'<html><body><pre id="src">{html_lib.escape(text)}</pre><div id="result">pending'
            f'</div><script src="{script.as_uri()}"></script><script>'
            "mermaid.initialize({startOnLoad: false});"
            "mermaid.parse(document.getElementById('src').textContent).then("
            "r => { document.getElementById('result').textContent = 'OK ' + r.diagramType; },"
            "e => { document.getElementById('result').textContent = 'ERROR ' + e; });"
            "</script></body></html>")
        dom = dump_dom(page.as_uri(), tmp_path, budget_ms=10000)
        result = re.search(r'<div id="result">(.*?)</div>', dom, re.S).group(1)
        assert result == "OK sequence", result[:500]
