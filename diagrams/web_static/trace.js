/* One trace, as it arrives: polls /api/trace/<id> and redraws every view.
 *
 * The server answers {"unchanged": true} while no span has arrived since the
 * version we hold; otherwise the whole view: spans (tree order), the flow check
 * and the sequence diagram as SVG. /live follows the newest boot ("latest").
 */
'use strict';

(function () {
  var el = novalab.el;
  var live = location.pathname === '/live';
  var ref = live ? 'latest' : location.pathname.split('/').pop();
  var version = '';
  var view = null;
  var tab = 'sequence';
  var callgraphFor = '';  // the version the call graph was drawn for

  // Tabs ----------------------------------------------------------------------------------

  function showTab(name) {
    if (!document.getElementById('panel-' + name)) name = 'sequence';
    tab = name;
    document.querySelectorAll('#tabs a').forEach(function (a) {
      a.classList.toggle('active', a.dataset.tab === name);
    });
    document.querySelectorAll('.panel').forEach(function (p) {
      p.hidden = p.id !== 'panel-' + name;
    });
    if (name === 'callgraph') loadCallgraph();
  }
  window.addEventListener('hashchange', function () { showTab(location.hash.slice(1)); });
  showTab(location.hash.slice(1));

  // Views ---------------------------------------------------------------------------------

  function drawHeader(doc) {
    var row = doc.row;
    var servers = row.servers.map(function (s) { return s.name || s.id; }).join(', ');
    var title = (live ? 'live: ' : '') + row.operation + (servers ? ' · ' + servers : '');
    document.getElementById('title').textContent = title;
    document.title = title + ' · novalab';
    drawSteps(doc.check.summary);
    var request = row.create_request_id || row.request_ids[0];
    document.getElementById('summary').textContent =
      'trace ' + row.trace_id + ' · ' + doc.spans.length + ' spans from ' +
      doc.services.length + ' services · ' + novalab.ms(doc.duration_ms) +
      (request ? ' · ' + request : '') + ' · ' + row.status;
    var state = document.getElementById('state');
    var running = !doc.complete || row.status === 'BUILD';
    state.textContent = running ? 'spans arriving…' : 'complete';
    state.className = 'badge ' + (running ? 'busy' : 'done');
  }

  /** Which table the page draws (the server picks the one the trace shows). */
  function drawFlowName(flow) {
    document.getElementById('flow-steps').textContent = flow.steps;
    document.getElementById('flow-name').textContent = flow.name;
    document.getElementById('flow-name').title = flow.title;
    document.getElementById('flow-why').textContent = flow.why ? ' (' + flow.why + ')' : '';
    document.body.dataset.flow = flow.name;
  }

  /** "58/58 steps matched", or of the steps this boot implies ("expected"). */
  function drawSteps(summary) {
    var steps = document.getElementById('steps');
    steps.dataset.matched = summary.matched;
    steps.dataset.total = summary.total;
    var all = summary.expected === summary.total;
    steps.textContent = summary.matched_expected + '/' + summary.expected +
      (all ? ' steps matched' : ' expected steps matched (' +
       (summary.total - summary.expected) + ' not expected for this boot)') +
      (summary.out_of_order ? ', ' + summary.out_of_order + ' out of order' : '');
    steps.className = summary.ok ? 'good' : '';
  }

  function drawSequence(doc) {
    var box = document.getElementById('sequence-box');
    box.innerHTML = doc.sequence_svg;  // our own SVG: every text in it is escaped
    box.querySelectorAll('g.arrow[data-span]').forEach(function (g) {
      g.addEventListener('click', function () { novalab.details.select(g.dataset.span); });
    });
    markSequence(novalab.details.selected());
  }

  function markSequence(id) {
    document.querySelectorAll('#sequence-box g.arrow').forEach(function (g) {
      g.classList.toggle('picked', !!id && g.dataset.span === id);
    });
  }

  function drawFlow(doc) {
    var body = document.querySelector('#flow-table tbody');
    body.textContent = '';
    doc.check.steps.forEach(function (step) {
      var tr = el('tr', null, step.status + (step.out_of_order ? ' late' : ''));
      tr.dataset.step = step.number;
      tr.dataset.status = step.status;
      tr.appendChild(el('td', step.number, 'num'));
      var drawn = step.drawn || {from: step.from, to: step.to};
      tr.appendChild(el('td', drawn.from + ' → ' + drawn.to));
      var what = el('td');
      what.appendChild(el('div', step.text));
      if (step.drawn && (step.drawn.from !== step.from || step.drawn.to !== step.to)) {
        what.appendChild(el('div', 'the table draws ' + step.request, 'aside'));
      }
      step.notes.forEach(function (n) { what.appendChild(el('div', n, 'aside')); });
      if (step.out_of_order) {
        what.appendChild(el('div', 'out of causal order: before step(s) ' +
                                   step.precedes.join(', '), 'aside bad'));
      }
      tr.appendChild(what);
      if (step.status === 'matched') {
        tr.appendChild(el('td', (step.edge === 'end' ? 'end +' : '+') +
                                novalab.ms(step.offset_ms), 'num'));
        tr.appendChild(el('td', step.span.service + ' ' + step.span.kind + ' ' + step.span.name,
                          'mono'));
        tr.dataset.span = step.span.span_id;
        tr.addEventListener('click', function () { novalab.details.select(step.span.span_id); });
      } else if (step.status === 'missing') {
        tr.appendChild(el('td', 'MISSING', 'bad'));
        tr.appendChild(el('td', step.rule, 'aside'));
      } else {  // not_expected: this boot did not ask for it (no volume, no network)
        tr.appendChild(el('td', 'not expected'));
        tr.appendChild(el('td', step.not_expected || '', 'aside'));
      }
      body.appendChild(tr);
    });
    var notes = document.getElementById('flow-notes');
    notes.textContent = '';
    notes.appendChild(el('p', document.getElementById('steps').textContent,
                         doc.check.summary.ok ? 'good' : ''));
    if (doc.check.interleave.length) {
      notes.appendChild(el('h3', 'May interleave (the table\'s order is not the only one)'));
      var list = el('ul');
      doc.check.interleave.forEach(function (i) {
        list.appendChild(el('li', 'steps ' + i.later.join(', ') + ' before ' +
                                  i.earlier.join(', ') + ': ' + i.reason));
      });
      notes.appendChild(list);
    }
    if (doc.check.notes.length) {
      notes.appendChild(el('h3', 'About this trace'));
      var more = el('ul');
      doc.check.notes.forEach(function (n) { more.appendChild(el('li', n)); });
      notes.appendChild(more);
    }
  }

  function markFlow(id) {
    document.querySelectorAll('#flow-table tbody tr').forEach(function (tr) {
      tr.classList.toggle('picked', !!id && tr.dataset.span === id);
    });
  }

  function loadCallgraph() {
    if (!view || callgraphFor === view.version) return;
    var box = document.getElementById('callgraph-box');
    var wanted = view.version;
    callgraphFor = wanted;
    box.textContent = 'drawing the call graph…';
    fetch('/api/trace/' + view.row.trace_id + '/callgraph.svg').then(function (response) {
      if (response.ok) return response.text().then(function (svg) {
        if (callgraphFor !== wanted) return;
        box.innerHTML = svg.slice(svg.indexOf('<svg'));  // without the XML prolog
        fitCallgraph();
      });
      return response.json().then(function (body) {
        box.textContent = '';
        box.appendChild(el('p', body.error, 'message'));
      });
    }).catch(function (error) { box.textContent = String(error); callgraphFor = ''; });
  }

  /** The call graph fits the panel's width, unless "actual size" is ticked. */
  function fitCallgraph() {
    var svg = document.querySelector('#callgraph-box svg');
    if (!svg) return;
    if (!svg.dataset.width) {
      svg.dataset.width = svg.getAttribute('width');
      svg.dataset.height = svg.getAttribute('height');
    }
    var actual = document.getElementById('callgraph-actual').checked;
    svg.setAttribute('width', actual ? svg.dataset.width : '100%');
    svg.setAttribute('height', actual ? svg.dataset.height : 'auto');
  }
  document.getElementById('callgraph-actual').addEventListener('change', fitCallgraph);

  function drawDownloads(doc) {
    var list = document.getElementById('download-list');
    list.textContent = '';
    var base = '/api/trace/' + doc.row.trace_id + '/';
    [['otlp.json', 'OTLP JSON', 'the spans as the OpenTelemetry Collector writes them'],
     ['jaeger.json', 'Jaeger JSON', 'Jaeger UI: Search, JSON File'],
     ['sequence.svg', 'Sequence diagram (SVG)', ''],
     ['sequence.html', 'Sequence diagram (HTML page)', 'hover an arrow for its span'],
     ['sequence.mmd', 'Sequence diagram (Mermaid)', ''],
     ['sequence.puml', 'Sequence diagram (PlantUML)', ''],
     ['callgraph.svg', 'Call graph (SVG)', 'needs graphviz\' dot']].forEach(function (item) {
      var li = el('li');
      var a = el('a', item[1]);
      a.href = base + item[0];
      a.download = 'trace-' + doc.row.trace_id + '.' + item[0];
      li.appendChild(a);
      if (item[2]) li.appendChild(el('span', ' ' + item[2], 'aside'));
      list.appendChild(li);
    });
  }

  function showWaiting(doc) {
    var box = document.getElementById('waiting');
    box.hidden = false;
    box.textContent = doc.message;
    drawFlowName(doc.flow);
    drawSteps(doc.check.summary);
    document.getElementById('title').textContent = 'live: waiting for a boot';
    document.getElementById('state').textContent = 'waiting';
    document.getElementById('state').className = 'badge busy';
  }

  function draw(doc) {
    document.getElementById('waiting').hidden = true;
    drawFlowName(doc.flow);
    drawHeader(doc);
    drawSequence(doc);
    drawFlow(doc);
    novalab.waterfall.draw(doc);
    novalab.details.setSpans(doc.spans);
    markFlow(novalab.details.selected());
    drawDownloads(doc);
    if (tab === 'callgraph') loadCallgraph();
    document.body.dataset.version = doc.version;
    document.body.dataset.spans = doc.spans.length;
  }

  novalab.details.onSelect(function (id) { markSequence(id); markFlow(id); });

  function poll() {
    var url = '/api/trace/' + ref + '?known=' + encodeURIComponent(version);
    return novalab.getJSON(url).then(function (doc) {
      if (doc.unchanged) return;
      version = doc.version;
      if (doc.waiting) showWaiting(doc);
      else { view = doc; draw(doc); }
    }, function (error) {
      var box = document.getElementById('waiting');
      box.hidden = false;
      box.textContent = error.message;
    });
  }

  novalab.every(novalab.pollMs(), poll);
})();
