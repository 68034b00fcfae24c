/* The class page: polls /api/class (the lab service's rows, asked with the teacher's
   token) and redraws one row per learner and lab. */
'use strict';

(function () {
  var el = novalab.el;
  var body = document.querySelector('#standing tbody');
  var filter = document.getElementById('filter');
  var empty = document.getElementById('empty');
  var rows = [];

  function grade(last) {
    if (!last) return '–';
    return last.checks_passed + '/' + last.checks + (last.passed ? ' passed' : '');
  }

  function draw() {
    var wanted = filter.value.trim().toLowerCase();
    var shown = rows.filter(function (r) {
      return !wanted || (r.learner + ' ' + r.lab).toLowerCase().indexOf(wanted) >= 0;
    });
    body.textContent = '';
    shown.forEach(function (row) {
      var tr = el('tr');
      tr.appendChild(el('td', row.learner));
      tr.appendChild(el('td', row.lab, 'mono'));
      tr.appendChild(el('td', row.attempts, 'num'));
      var last = el('td', grade(row.last_grade), 'num');
      if (row.last_grade) last.title = 'graded at ' + row.last_grade.graded_at;
      tr.appendChild(last);
      var done = el('td', row.done, 'status');
      if (row.done === 'in progress') done.classList.add('busy');
      tr.appendChild(done);
      body.appendChild(tr);
    });
    document.getElementById('count').textContent =
      shown.length + (shown.length === rows.length ? '' : ' of ' + rows.length) + ' rows';
  }

  function load() {
    return novalab.getJSON('/api/class').then(function (doc) {
      rows = doc.standing;
      empty.hidden = rows.length > 0;
      empty.textContent = 'No learners yet: novalab class add NAME...';
      draw();
      document.body.dataset.rows = rows.length;
    }, function (error) {
      rows = [];
      draw();
      empty.hidden = false;
      empty.textContent = error.message;
      document.body.dataset.error = error.status || 'failed';
    });
  }

  filter.addEventListener('input', draw);
  novalab.every(5000, load);
})();
