/* The timeline ("waterfall", as Jaeger draws it): one bar per span.
 *
 * Rows follow the span tree (parents before children, siblings by start),
 * indented by depth; a bar's offset and length are the span's start and
 * duration to the scale of the whole trace; its colour is its service. The
 * chips above filter by service. Clicking a row shows the span's details.
 */
'use strict';

novalab.waterfall = (function () {
  var el = novalab.el;
  var box = document.getElementById('waterfall');
  var chips = document.getElementById('wf-services');
  var ruler = document.getElementById('wf-ruler');
  var hidden = {};  // service -> true while filtered out

  function apply() {
    Array.prototype.forEach.call(box.children, function (row) {
      row.hidden = !!hidden[row.dataset.service];
    });
  }

  function drawChips(view) {
    var counts = {};
    view.spans.forEach(function (s) { counts[s.service] = (counts[s.service] || 0) + 1; });
    chips.textContent = '';
    view.services.forEach(function (service) {
      var label = el('label', null, 'chip');
      var box = el('input');
      box.type = 'checkbox';
      box.checked = !hidden[service];
      box.dataset.service = service;
      box.addEventListener('change', function () { hidden[service] = !box.checked; apply(); });
      var swatch = el('span', null, 'swatch');
      swatch.style.background = novalab.colour(service);
      label.appendChild(box);
      label.appendChild(swatch);
      label.appendChild(document.createTextNode(service + ' ' + counts[service]));
      chips.appendChild(label);
    });
    [['all', false], ['none', true]].forEach(function (pair) {
      var button = el('button', pair[0]);
      button.addEventListener('click', function () {
        view.services.forEach(function (s) { hidden[s] = pair[1]; });
        chips.querySelectorAll('input').forEach(function (i) { i.checked = !pair[1]; });
        apply();
      });
      chips.appendChild(button);
    });
  }

  function drawRuler(total) {
    ruler.textContent = '';
    ruler.appendChild(el('div', 'service and span', 'wf-label'));
    var track = el('div', null, 'wf-track');
    for (var i = 0; i <= 4; i++) {
      var tick = el('span', novalab.ms(total * i / 4), 'tick');
      tick.style.left = (i * 25) + '%';
      if (i === 4) tick.classList.add('last');
      track.appendChild(tick);
    }
    ruler.appendChild(track);
  }

  function draw(view) {
    var total = Math.max(view.duration_ms, 0.001);
    drawChips(view);
    drawRuler(total);
    var rows = document.createDocumentFragment();
    view.spans.forEach(function (s) {
      var row = el('div', null, 'wf-row' + (s.status === 'ERROR' ? ' error' : ''));
      row.dataset.span = s.id;
      row.dataset.service = s.service;
      if (s.id === novalab.details.selected()) row.classList.add('picked');
      var label = el('div', null, 'wf-label');
      label.style.paddingLeft = (4 + Math.min(s.depth, 40) * 12) + 'px';
      label.title = s.service + ' ' + s.kind + ' ' + s.name;
      var swatch = el('span', null, 'swatch');
      swatch.style.background = novalab.colour(s.service);
      label.appendChild(swatch);
      label.appendChild(el('span', s.service, 'svc'));
      label.appendChild(document.createTextNode(' ' + s.name));
      var track = el('div', null, 'wf-track');
      var left = 100 * s.start_ms / total;
      var width = 100 * s.duration_ms / total;
      var bar = el('div', null, 'wf-bar');
      bar.style.left = left + '%';
      bar.style.width = width + '%';
      bar.style.background = novalab.colour(s.service);
      var time = el('span', novalab.ms(s.duration_ms), 'wf-dur');
      if (left + width > 80) time.style.right = (100 - left) + '%';
      else time.style.left = (left + width) + '%';
      track.appendChild(bar);
      track.appendChild(time);
      row.appendChild(label);
      row.appendChild(track);
      row.addEventListener('click', function () { novalab.details.select(s.id); });
      rows.appendChild(row);
    });
    box.textContent = '';
    box.appendChild(rows);
    apply();
  }

  novalab.details.onSelect(function (id) {
    Array.prototype.forEach.call(box.children, function (row) {
      row.classList.toggle('picked', row.dataset.span === id);
    });
  });

  return {draw: draw};
})();
