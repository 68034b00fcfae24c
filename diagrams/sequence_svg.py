"""Sequence diagrams as hand-written SVG, and as one self-contained HTML page.

No drawing library and no external tool: the SVG is assembled as text, so the
same trace always gives byte-for-byte the same picture. Layout: lifelines in
columns (header box, dashed line), one row per arrow top to bottom, the time
of each arrow (milliseconds since the trace began) in the left margin.

- call (``sync``): solid line, filled head;
- answer (``return``): dashed line, open head;
- message (``async``): solid line, open head;
- activation bars: a called lifeline from the call to its answer, a
  consumer while it handles a message;
- red: a step out of causal order.

The HTML page inlines the SVG, its CSS and a little JavaScript (no CDN, no
network): hovering an arrow shows its span (service, kind, times, all
attributes) and the upstream function it stands for, with a link to the
source (``novalab.upstream.url``); a click pins it, and so does opening the
page as ``sequence.html#step-5``.
"""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

from novalab.diagrams.flows.model import ASYNC, RETURN
from novalab.diagrams.hosts import label as host_label
from novalab.diagrams.sequence import SequenceDiagram, arrow_details

COL = 124  # lifeline spacing
LEFT = 96  # time column
TITLE_H = 58
HEAD_H = 40
ROW = 30
FONT = "Helvetica, Arial, sans-serif"
CHAR_W = 6.2  # average glyph width at 11px, for wrapping

FILLS = {"actor": ("#ffffff", "#37474f", ""),
         "service": ("#e3f2fd", "#1565c0", ""),
         "infra": ("#f5f5f5", "#757575", ' stroke-dasharray="4 2"')}

STYLE = """
.title{font-size:16px;font-weight:bold}
.subtitle{font-size:12px;fill:#555}
.lifeline .line{stroke:#9e9e9e;stroke-dasharray:4 4}
.lifeline .name{font-size:11px;font-weight:bold;text-anchor:middle}
.activation{fill:#fff8e1;stroke:#8d6e63}
.arrow .shaft{stroke:#263238;stroke-width:1.4;fill:none}
.arrow.return .shaft{stroke-dasharray:6 4}
.arrow .hit{stroke:transparent;stroke-width:12;fill:none}
.arrow .label{font-size:11px}
.arrow .time{font-size:10px;fill:#546e7a;text-anchor:end}
.arrow.out-of-order .shaft{stroke:#c62828}
.arrow.out-of-order .label{fill:#c62828}
.row{fill:#fafafa}
.footer{font-size:11px}
.footer .head{font-weight:bold}
.legend{font-size:10px;fill:#555}
"""


def _x(diagram: SequenceDiagram, participant: str) -> float:
    return LEFT + diagram.index(participant) * COL + COL / 2


def _row_y(row: int) -> float:
    return TITLE_H + HEAD_H + 28 + row * ROW


def _wrap_name(name: str, width: float = COL - 12) -> list[str]:
    if len(name) * CHAR_W <= width:
        return [name]
    cuts = [i for i, c in enumerate(name) if c in " _-."]
    if not cuts:
        return [name]
    cut = min(cuts, key=lambda i: abs(i - len(name) / 2))
    keep = name[cut] if name[cut] != " " else ""
    return [name[:cut] + keep, name[cut + 1:]]


def _footer_lines(diagram: SequenceDiagram) -> list[tuple[str, str, str]]:
    """(css class, data-step or "", text) lines under the diagram."""
    lines: list[tuple[str, str, str]] = []
    if diagram.missing:
        lines.append(("head", "", f"Missing steps ({len(diagram.missing)}):"))
        lines += [("missing-step", str(n), f"{n}. {text}") for n, text in diagram.missing]
    if diagram.not_expected:
        lines.append(("head", "", f"Not expected for this boot ({len(diagram.not_expected)}):"))
        lines += [("note", str(n), f"{n}. {text} ({why})")
                  for n, text, why in diagram.not_expected]
    noted = [(a.number, note) for a in diagram.arrows for note in a.notes]
    if noted or diagram.notes:
        lines.append(("head", "", "Notes:"))
        lines += [("note", str(n), f"{n}. {note}") for n, note in noted]
        lines += [("note", "", note) for note in diagram.notes]
    return lines


def render_svg(diagram: SequenceDiagram) -> str:
    """The diagram as a standalone SVG document."""
    n_cols = len(diagram.participants)
    rows = len(diagram.arrows)
    footer = _footer_lines(diagram)
    width = LEFT + n_cols * COL + 24
    bottom = _row_y(max(rows, 1)) + 4
    longest = max([len(t) for _, _, t in footer] + [0]) * CHAR_W + 40
    width = int(max(width, longest if longest < 4000 else 4000))
    height = int(bottom + 24 + 16 * len(footer) + 16)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="sequence" data-mode="{diagram.mode}"'
           f' width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
           f' font-family="{FONT}" font-size="11">',
           f"<title>{escape(diagram.title)}</title>",
           f"<style>{STYLE}</style>",
           "<defs>",
           _marker("head-filled", "#263238", filled=True),
           _marker("head-open", "#263238", filled=False),
           _marker("head-filled-bad", "#c62828", filled=True),
           _marker("head-open-bad", "#c62828", filled=False),
           "</defs>",
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text class="title" x="12" y="22">{escape(diagram.title)}</text>',
           f'<text class="subtitle" x="12" y="42">{escape(diagram.subtitle)}</text>']
    out.append(_legend(width))
    for row in range(0, rows, 2):
        y = _row_y(row)
        out.append(f'<rect class="row" x="{LEFT}" y="{y - ROW / 2 - 4:.1f}" '
                   f'width="{n_cols * COL}" height="{ROW}"/>')
    top = TITLE_H
    for i, p in enumerate(diagram.participants):
        x = LEFT + i * COL + COL / 2
        fill, stroke, dash = FILLS.get(p.kind, FILLS["service"])
        lines = _wrap_name(p.name)
        tip = f"{p.name} ({p.kind})" + (f": {p.how}" if p.how else "") + \
            (f", on {', '.join(p.hosts)}" if p.hosts else "")
        out.append(f'<g class="lifeline" data-lifeline="{escape(p.name, _Q)}" '
                   f'data-kind="{p.kind}"><title>{escape(tip)}</title>')
        out.append(f'<line class="line" x1="{x:.1f}" y1="{top + HEAD_H}" x2="{x:.1f}" '
                   f'y2="{bottom:.1f}"/>')
        out.append(f'<rect x="{x - COL / 2 + 6:.1f}" y="{top}" width="{COL - 12}" '
                   f'height="{HEAD_H}" rx="{12 if p.kind == "actor" else 3}" fill="{fill}" '
                   f'stroke="{stroke}"{dash}/>')
        first = top + HEAD_H / 2 + 4 - (6 if len(lines) == 2 else 0)
        for k, text in enumerate(lines):
            out.append(f'<text class="name" x="{x:.1f}" y="{first + 13 * k:.1f}">'
                       f"{escape(text)}</text>")
        if p.hosts:  # the trace crosses hosts: where this participant ran
            out.append(f'<text class="host" x="{x:.1f}" y="{top + HEAD_H + 12}" '
                       'style="font-size:10px;fill:#546e7a;text-anchor:middle">'
                       f"{escape(host_label(p.hosts))}</text>")
        out.append("</g>")
    for bar in diagram.activations:
        x = _x(diagram, bar.participant)
        y1 = _row_y(bar.first) - 4
        y2 = _row_y(bar.last) + 4
        out.append(f'<rect class="activation" data-lifeline="{escape(bar.participant, _Q)}" '
                   f'x="{x - 5:.1f}" y="{y1:.1f}" width="10" height="{y2 - y1:.1f}"/>')
    for row, arrow in enumerate(diagram.arrows):
        out.append(_arrow(diagram, row, arrow))
    y = bottom + 24
    out.append('<g class="footer">')
    for css, step, text in footer:
        data = f' data-step="{step}"' if step else ""
        out.append(f'<text class="{css}"{data} x="12" y="{y:.1f}">{escape(text)}</text>')
        y += 16
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


_Q = {'"': "&quot;"}


def _marker(name: str, colour: str, *, filled: bool) -> str:
    path = ('<path d="M0,0 L10,5 L0,10 z" fill="{c}"/>' if filled else
            '<path d="M0,0 L10,5 L0,10" fill="none" stroke="{c}" stroke-width="1.5"/>')
    return (f'<marker id="{name}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="10" '
            'markerHeight="10" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
            f"{path.format(c=colour)}</marker>")


def _legend(width: int) -> str:
    x = width - 330
    parts = ['<g class="legend-box">']
    for i, (label, dash, head) in enumerate((("call", "", "head-filled"),
                                             ("answer", ' stroke-dasharray="6 4"', "head-open"),
                                             ("message", "", "head-open"))):
        x0 = x + i * 105
        parts.append(f'<line x1="{x0}" y1="36" x2="{x0 + 40}" y2="36" stroke="#263238"'
                     f'{dash} marker-end="url(#{head})"/>')
        parts.append(f'<text class="legend" x="{x0 + 46}" y="40">{label}</text>')
    parts.append("</g>")
    return "".join(parts)


def _arrow(diagram: SequenceDiagram, row: int, arrow) -> str:
    y = _row_y(row)
    x1, x2 = _x(diagram, arrow.source), _x(diagram, arrow.target)
    bad = arrow.out_of_order
    head = ("head-filled" if arrow.style not in (RETURN, ASYNC) else "head-open") + \
        ("-bad" if bad else "")
    classes = f"arrow {arrow.style}" + (" out-of-order" if bad else "")
    span = arrow.span
    data = f' data-step="{arrow.number}" data-from="{escape(arrow.source, _Q)}" ' \
           f'data-to="{escape(arrow.target, _Q)}"'
    if span is not None:
        data += f' data-span="{span.span_id}" data-service="{escape(span.service, _Q)}"'
    label = f"{arrow.number}. {arrow.text}" + (" (out of order)" if bad else "")
    tip = [label, f"{arrow.source} -> {arrow.target}", f"+{arrow.offset_ms:.3f} ms"]
    if arrow.request:
        tip.append(f"table: {arrow.request}")
    if span is not None:
        tip.append(f"{'end of ' if arrow.edge == 'end' else ''}{span.service} {span.kind} "
                   f"{span.name} ({span.span_id})")
    parts = [f'<g class="{classes}" id="arrow-{arrow.number}"{data}>',
             f"<title>{escape(chr(10).join(tip))}</title>"]
    if x1 == x2:  # a call to itself: a small loop
        d = f"M{x1:.1f},{y - 6:.1f} h30 v12 h-28"
        parts.append(f'<path class="hit" d="{d}"/>')
        parts.append(f'<path class="shaft" d="{d}" marker-end="url(#{head})"/>')
    else:
        end = x2 - 5 if x2 > x1 else x2 + 5  # stop at the activation bar's edge
        parts.append(f'<line class="hit" x1="{x1:.1f}" y1="{y:.1f}" x2="{end:.1f}" '
                     f'y2="{y:.1f}"/>')
        parts.append(f'<line class="shaft" x1="{x1:.1f}" y1="{y:.1f}" x2="{end:.1f}" '
                     f'y2="{y:.1f}" marker-end="url(#{head})"/>')
    right_edge = LEFT + len(diagram.participants) * COL
    if min(x1, x2) + 8 + len(label) * CHAR_W > right_edge:  # would run off the right side
        text_at = f'x="{max(x1, x2) - 8:.1f}" text-anchor="end"'
    else:
        text_at = f'x="{min(x1, x2) + 8:.1f}"'
    parts.append(f'<text class="label" {text_at} y="{y - 5:.1f}">{escape(label)}</text>')
    parts.append(f'<text class="time" x="{LEFT - 8}" y="{y + 4:.1f}">'
                 f"+{arrow.offset_ms:.3f} ms</text>")
    parts.append("</g>")
    return "".join(parts)


# -- HTML -----------------------------------------------------------------------------------

PAGE_CSS = """
body{margin:0;font:13px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#212121}
header{padding:10px 16px;border-bottom:1px solid #ddd}
header h1{font-size:17px;margin:0}
header p{margin:2px 0 0;color:#555}
#layout{display:flex;align-items:stretch;height:calc(100vh - 64px)}
#diagram{flex:1;overflow:auto}
#details{width:400px;flex:none;overflow:auto;border-left:1px solid #ddd;padding:8px 14px;
  background:#fafafa}
#details h2{font-size:15px;margin:6px 0}
#details table{border-collapse:collapse;width:100%}
#details td{vertical-align:top;padding:2px 4px;border-bottom:1px solid #eee;
  font-family:ui-monospace,monospace;font-size:11.5px;word-break:break-all}
#details td.key{color:#555;white-space:nowrap;word-break:normal}
#details .note{background:#fff8e1;border-left:3px solid #ffb300;padding:4px 8px;margin:6px 0}
.arrow{cursor:pointer}
.arrow:hover .shaft,.arrow.selected .shaft{stroke-width:2.6}
.arrow.selected .label{font-weight:bold}
#notes{padding:8px 16px;border-top:1px solid #ddd}
#notes h2{font-size:14px}
"""

PAGE_JS = r"""
(function () {
  var data = JSON.parse(document.getElementById('arrow-data').textContent);
  var panel = document.getElementById('details');
  var pinned = null;
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function row(table, key, value) {
    var tr = el('tr');
    tr.appendChild(el('td', key, 'key'));
    var td = el('td');
    if (value instanceof Node) td.appendChild(value);
    else td.textContent = typeof value === 'object' ? JSON.stringify(value) : String(value);
    tr.appendChild(td);
    table.appendChild(tr);
  }
  function show(key) {
    var d = data[key];
    if (!d) return;
    panel.textContent = '';
    panel.appendChild(el('h2', d.number + '. ' + d.text));
    panel.appendChild(el('p', d.from + ' \u2192 ' + d.to + '   (+' + d.offset_ms.toFixed(3) +
                          ' ms, ' + d.style + ')'));
    if (d.request) panel.appendChild(el('p', 'The table draws: ' + d.request, 'note'));
    if (d.out_of_order) panel.appendChild(el('p', 'Out of causal order', 'note'));
    (d.notes || []).forEach(function (n) { panel.appendChild(el('p', n, 'note')); });
    if (d.upstream) {
      var p = el('p', 'Upstream: ');
      var a = el('a', d.upstream.function);
      a.href = d.upstream.url; a.target = '_blank'; a.rel = 'noopener';
      p.appendChild(a);
      panel.appendChild(p);
    }
    if (d.span) {
      var s = d.span, table = el('table');
      row(table, 'service', s.service + (s.host ? ' @ ' + s.host : ''));
      row(table, 'span', s.name);
      row(table, 'kind', s.kind);
      row(table, 'span id', s.span_id);
      row(table, 'moment', s.moment + ' of span');
      row(table, 'start', '+' + s.start_ms.toFixed(3) + ' ms');
      row(table, 'duration', s.duration_ms.toFixed(3) + ' ms');
      row(table, 'status', s.status);
      if (s.events.length) row(table, 'events', s.events.join(', '));
      Object.keys(s.attributes).forEach(function (k) { row(table, k, s.attributes[k]); });
      panel.appendChild(table);
    }
    if (d.rule) panel.appendChild(el('p', 'Rule: ' + d.rule));
  }
  var arrows = document.querySelectorAll('g.arrow');
  Array.prototype.forEach.call(arrows, function (g) {
    g.addEventListener('mouseenter', function () { if (!pinned) show(g.dataset.step); });
    g.addEventListener('click', function () {
      if (pinned) pinned.classList.remove('selected');
      pinned = (pinned === g) ? null : g;
      if (pinned) { g.classList.add('selected'); show(g.dataset.step); }
    });
  });
  var wanted = /^#step-(\d+)$/.exec(window.location.hash);  // a link to one step
  if (wanted && document.getElementById('arrow-' + wanted[1])) {
    pinned = document.getElementById('arrow-' + wanted[1]);
    pinned.classList.add('selected');
    show(wanted[1]);
  }
  document.body.setAttribute('data-lifelines', document.querySelectorAll('g.lifeline').length);
  document.body.setAttribute('data-arrows', arrows.length);
  document.body.setAttribute('data-ready', 'yes');
})();
"""


def _script_json(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, indent=None,
                      separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(diagram: SequenceDiagram) -> str:
    """One self-contained page: the SVG inline, its details on hover and click."""
    svg = render_svg(diagram)
    details = {str(a.number): arrow_details(diagram, a) for a in diagram.arrows}
    notes = [f"<li>{escape(f'{a.number}. {n}')}</li>" for a in diagram.arrows for n in a.notes]
    notes += [f"<li>{escape(n)}</li>" for n in diagram.notes]
    missing = [f"<li>{escape(f'{n}. {text}')}</li>" for n, text in diagram.missing]
    sections = []
    if notes:
        sections.append("<h2>Notes</h2><ul>" + "".join(notes) + "</ul>")
    if missing:
        sections.append(f"<h2>Missing steps ({len(missing)})</h2><ul>" + "".join(missing) +
                        "</ul>")
    skipped = [f"<li>{escape(f'{n}. {text}: {why}')}</li>"
               for n, text, why in diagram.not_expected]
    if skipped:
        sections.append(f"<h2>Not expected for this boot ({len(skipped)})</h2><ul>"
                        + "".join(skipped) + "</ul>")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(diagram.title)}</title>",
        f"<style>{PAGE_CSS}</style></head>",
        "<body>",
        f"<header><h1>{escape(diagram.title)}</h1><p>{escape(diagram.subtitle)} · hover or "
        "click an arrow for its span</p></header>",
        '<div id="layout"><div id="diagram">',
        svg.rstrip("\n"),
        '</div><aside id="details"><p>Hover over an arrow to see the span behind it; click to '
        "keep it here.</p></aside></div>",
        f'<section id="notes">{"".join(sections)}</section>',
        f'<script type="application/json" id="arrow-data">{_script_json(details)}</script>',
        f"<script>{PAGE_JS}</script>",
        "</body></html>",
    ]) + "\n"
