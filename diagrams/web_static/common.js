/* Helpers shared by the list and the trace page: DOM, fetching, formatting, colours. */
'use strict';

var novalab = (function () {
  /** A new element with optional text and class. */
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  /** GET a JSON document; rejects with the server's own error message. */
  function getJSON(url) {
    return fetch(url, {headers: {Accept: 'application/json'}}).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (!response.ok) {
          var error = new Error(body.error || (response.status + ' ' + response.statusText));
          error.status = response.status;
          throw error;
        }
        return body;
      });
    });
  }

  /** Call fn now and then every `ms`, never two at once (a slow answer delays the next). */
  function every(ms, fn) {
    function tick() {
      Promise.resolve().then(fn).catch(function (e) { console.error(e); })
        .then(function () { setTimeout(tick, ms); });
    }
    tick();
  }

  /** The polling interval: ?poll=250 on the page's URL, else about a second. */
  function pollMs() {
    var asked = parseInt(new URLSearchParams(location.search).get('poll'), 10);
    return asked >= 50 ? asked : 1000;
  }

  function ms(value) {
    if (value >= 1000) return (value / 1000).toFixed(2) + ' s';
    if (value >= 10) return value.toFixed(1) + ' ms';
    return value.toFixed(2) + ' ms';
  }

  function clock(unixNano) {
    var when = new Date(unixNano / 1e6);
    var today = new Date().toDateString() === when.toDateString();
    return (today ? '' : when.toLocaleDateString() + ' ') + when.toLocaleTimeString();
  }

  // One colour per service, the same on every page and every trace. The services of
  // novalab are listed so that neighbours in the flow get distinct colours; any other
  // service gets a hue from its name.
  var COLOURS = {
    'novalab-client': '#546e7a', 'keystone': '#8e24aa', 'nova-api': '#1e88e5',
    'nova-scheduler': '#d81b60', 'nova-conductor': '#43a047', 'nova-compute': '#00897b',
    'nova-api-metadata': '#5c6bc0', 'glance-api': '#f4511e', 'ceph-mon': '#6d4c41',
    'ceph-rgw': '#a1887f', 'ceph-osd': '#8d6e63', 'neutron-server': '#fb8c00',
    'neutron-dhcp-agent': '#c0ca33', 'neutron-l2-agent': '#7cb342',
    'neutron-metadata-proxy': '#ffb300', 'cinder-api': '#3949ab', 'cinder-volume': '#039be5',
    'cloud-init': '#78909c'
  };
  function colour(service) {
    if (COLOURS[service]) return COLOURS[service];
    var hash = 0;
    for (var i = 0; i < service.length; i++) hash = (hash * 31 + service.charCodeAt(i)) | 0;
    return 'hsl(' + (Math.abs(hash) % 360) + ', 55%, 48%)';
  }

  return {el: el, getJSON: getJSON, every: every, pollMs: pollMs, ms: ms, clock: clock,
          colour: colour};
})();
