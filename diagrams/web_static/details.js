/* The details panel of the trace page: everything one span carries.
 *
 * Any view selects a span with novalab.details.select(id); the panel shows its
 * service, kind and times, the upstream function it stands for (with a link to
 * the source on opendev.org, `novalab.upstream.url`), then its attributes,
 * events, links and resource. Views that highlight the selection subscribe
 * with onSelect(fn).
 */
'use strict';

novalab.details = (function () {
  var el = novalab.el;
  var panel = document.getElementById('details');
  var byId = {};
  var selected = null;
  var listeners = [];

  function table(rows) {
    var t = el('table', null, 'kv');
    rows.forEach(function (pair) {
      var tr = el('tr');
      tr.appendChild(el('td', pair[0], 'key'));
      var td = el('td');
      var value = pair[1];
      if (value instanceof Node) td.appendChild(value);
      else td.textContent = typeof value === 'object' ? JSON.stringify(value) : String(value);
      tr.appendChild(td);
      t.appendChild(tr);
    });
    return t;
  }

  function pairs(mapping) {
    return Object.keys(mapping).map(function (k) { return [k, mapping[k]]; });
  }

  /** A span id as a link when that span is in this trace. */
  function spanLink(id) {
    if (!byId[id]) return id;
    var a = el('a', id + ' (' + byId[id].name + ')');
    a.href = '#';
    a.addEventListener('click', function (e) { e.preventDefault(); select(id); });
    return a;
  }

  function section(title, count) {
    panel.appendChild(el('h3', title + (count === undefined ? '' : ' (' + count + ')')));
  }

  function render(s) {
    panel.textContent = '';
    panel.dataset.span = s.id;
    panel.appendChild(el('h2', s.name));
    var who = el('p', null, 'who');
    var swatch = el('span', null, 'swatch');
    swatch.style.background = novalab.colour(s.service);
    who.appendChild(swatch);
    who.appendChild(document.createTextNode(
      s.service + (s.host ? ' @ ' + s.host : '') + ' · ' + s.kind + ' · ' +
      novalab.ms(s.duration_ms) + ' at +' + novalab.ms(s.start_ms)));
    panel.appendChild(who);
    if (s.status === 'ERROR') {
      panel.appendChild(el('p', 'ERROR' + (s.status_message ? ': ' + s.status_message : ''),
                           'note bad'));
    }
    if (s.upstream && s.upstream.url) {
      var p = el('p', 'Upstream code: ', 'upstream');
      var a = el('a', s.upstream.function);
      a.href = s.upstream.url;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      p.appendChild(a);
      if (!s.upstream.own) {
        p.appendChild(document.createTextNode(' (from '));
        p.appendChild(spanLink(s.upstream.span));
        p.appendChild(document.createTextNode(')'));
      }
      panel.appendChild(p);
    }
    panel.appendChild(table([
      ['span id', s.id], ['parent', s.parent ? spanLink(s.parent) : '– (a root)'],
      ['start', '+' + s.start_ms.toFixed(3) + ' ms'],
      ['duration', s.duration_ms.toFixed(3) + ' ms'], ['status', s.status],
      ['scope', s.scope || '–']]));
    var attributes = pairs(s.attributes);
    section('Attributes', attributes.length);
    var attributeTable = table(attributes);
    attributeTable.id = 'attributes';
    panel.appendChild(attributeTable);
    if (s.events.length) {
      section('Events', s.events.length);
      s.events.forEach(function (e) {
        panel.appendChild(el('p', '+' + e.offset_ms.toFixed(3) + ' ms  ' + e.name, 'event'));
        if (Object.keys(e.attributes).length) panel.appendChild(table(pairs(e.attributes)));
      });
    }
    if (s.links.length) {
      section('Links', s.links.length);
      panel.appendChild(table(s.links.map(function (ln) {
        return ['span', byId[ln.span_id] ? spanLink(ln.span_id)
                                         : ln.span_id + ' in trace ' + ln.trace_id];
      })));
    }
    section('Resource');
    panel.appendChild(table(pairs(s.resource)));
  }

  function select(id) {
    if (!byId[id]) return;
    selected = id;
    render(byId[id]);
    listeners.forEach(function (fn) { fn(id); });
  }

  /** New spans arrived: keep showing the selected one, with what it has now. */
  function setSpans(spans) {
    byId = {};
    spans.forEach(function (s) { byId[s.id] = s; });
    if (selected && byId[selected]) render(byId[selected]);
  }

  return {
    select: select, setSpans: setSpans,
    selected: function () { return selected; },
    onSelect: function (fn) { listeners.push(fn); }
  };
})();
