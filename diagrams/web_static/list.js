/* The list of traces: polls /api/traces and redraws the table, newest first. */
'use strict';

(function () {
  var el = novalab.el;
  var body = document.querySelector('#traces tbody');
  var filter = document.getElementById('filter');
  var everything = document.getElementById('everything');
  var empty = document.getElementById('empty');
  var rows = [];

  /** Everything a user may type to find a row: names, ids, request ids. */
  function words(row) {
    var parts = [row.trace_id, row.operation].concat(row.request_ids, row.members);
    row.servers.forEach(function (s) { parts.push(s.id, s.name); });
    return parts.join(' ').toLowerCase();
  }

  function cell(tr, content, cls) {
    var td = el('td', null, cls);
    if (content instanceof Node) td.appendChild(content); else td.textContent = content;
    tr.appendChild(td);
    return td;
  }

  function draw() {
    var wanted = filter.value.trim().toLowerCase();
    var shown = rows.filter(function (r) { return !wanted || words(r).indexOf(wanted) >= 0; });
    body.textContent = '';
    shown.forEach(function (row) {
      var tr = el('tr', null, row.kind);
      tr.dataset.trace = row.trace_id;
      var link = el('a', novalab.clock(row.start_unix_nano));
      link.href = '/trace/' + row.trace_id;
      cell(tr, link);
      cell(tr, row.kind + (row.stitched ? ' (stitched)' : ''));
      cell(tr, row.operation);
      cell(tr, row.servers.map(function (s) {
        return (s.name || '?') + ' (' + s.id + ')';
      }).join(', ') || '–', 'mono');
      var request = row.create_request_id || row.request_ids[0] || '–';
      var more = row.request_ids.length - (row.request_ids.indexOf(request) >= 0 ? 1 : 0);
      cell(tr, request + (more > 0 ? ' (+' + more + ')' : ''), 'mono').title =
        row.request_ids.join('\n');
      cell(tr, String(row.services.length), 'num').title = row.services.join('\n');
      cell(tr, String(row.spans), 'num');
      var steps = cell(tr, row.steps ? row.steps + (row.flow ? ' ' + row.flow : '') : '–', 'num');
      if (row.flow) steps.title = 'steps of the ' + row.flow + ' table (the flow this trace shows)';
      var status = cell(tr, row.status, 'status');
      if (row.status === 'ERROR' || /^5\d\d$/.test(row.status)) status.classList.add('bad');
      if (row.status === 'BUILD') status.classList.add('busy');
      cell(tr, row.trace_id, 'mono faint');
      tr.addEventListener('click', function (event) {
        if (event.target.tagName !== 'A') location.href = link.href;
      });
      body.appendChild(tr);
    });
    document.getElementById('count').textContent =
      shown.length + (shown.length === rows.length ? '' : ' of ' + rows.length) + ' traces';
  }

  function load() {
    return novalab.getJSON('/api/traces' + (everything.checked ? '?everything=1' : ''))
      .then(function (doc) {
        document.getElementById('store').textContent = doc.traces_dir;
        rows = doc.rows;
        empty.hidden = rows.length > 0;
        document.getElementById('traces').hidden = rows.length === 0;
        if (!rows.length) {
          empty.textContent = doc.exists
            ? 'No trace matches yet' + (everything.checked ? '.' :
              ' (tick "everything" for periodic work and probes).')
            : 'No traces in ' + doc.traces_dir + ' yet. Start a cloud (novalab serve, ' +
              'novalab up) and boot a server: its trace appears here as it happens.';
        }
        draw();
        document.body.dataset.rows = rows.length;
      });
  }

  filter.addEventListener('input', draw);
  everything.addEventListener('change', load);
  novalab.every(novalab.pollMs(), load);
})();
