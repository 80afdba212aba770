// MA2H live inbox — progressive enhancement only: every page works without this file (issue 39).
// Served by the Hub itself (`/inbox/live.js`, CSP `script-src 'self'`, `connect-src 'self'`).
// It listens to `/inbox/events` (Server-Sent Events; on AWS one pulse per reconnect, i.e. a poll):
//   - the tab title and the "Open" link show the open count;
//   - a list page ([data-live=list]) is refetched and swapped when the inbox changed, unless the
//     operator is typing in it or has rows selected (then a "Show changes" button waits);
//   - a message page ([data-live=message]) that changed under its reader is swapped when nothing
//     in it was edited, otherwise a notice says so and offers a reload;
//   - opt-in desktop notifications for new urgent/high asks the operator may answer;
//   - a hidden tab stops reading unless alerts are on (each read costs store requests on AWS).
(function () {
  'use strict';
  if (!window.EventSource || !window.fetch || !window.DOMParser) return;
  var ALERTS_KEY = 'ma2h.alerts';
  var SEEN_KEY = 'ma2h.alerts.seen';
  var baseTitle = document.title.replace(/^\(\d+\) /, '');
  var version = null;
  var dirty = false; // a field of a message page's form was edited

  function store(key, value) {
    try {
      if (value === undefined) return window.localStorage.getItem(key);
      window.localStorage.setItem(key, value);
    } catch (e) { /* storage off: alerts just do not persist */ }
    return null;
  }
  function seen() {
    try { return JSON.parse(store(SEEN_KEY) || '[]'); } catch (e) { return []; }
  }
  function remember(ids) {
    var all = seen().concat(ids).filter(function (v, i, a) { return a.indexOf(v) === i; });
    store(SEEN_KEY, JSON.stringify(all.slice(-200)));
  }
  function alertsOn() {
    return store(ALERTS_KEY) === 'on' && window.Notification && Notification.permission === 'granted';
  }

  // ---- desktop alerts (opt-in) ----
  var toggle = document.getElementById('alerts');
  var latestAlerts = [];
  function showToggle() {
    if (!toggle || !window.Notification) return;
    var on = alertsOn();
    toggle.hidden = false;
    toggle.textContent = on ? 'Desktop alerts: on' : 'Desktop alerts: off';
    toggle.setAttribute('aria-pressed', on ? 'true' : 'false');
    toggle.title = Notification.permission === 'denied'
      ? 'Notifications are blocked for this site in your browser settings'
      : 'Notify me of new urgent and high-priority asks I can answer';
  }
  if (toggle) {
    toggle.addEventListener('click', function () {
      if (alertsOn()) { store(ALERTS_KEY, 'off'); showToggle(); return; }
      Notification.requestPermission().then(function (perm) {
        if (perm === 'granted') {
          store(ALERTS_KEY, 'on');
          // what is listed now is already in front of the operator: only later asks alert
          remember(latestAlerts.map(function (a) { return a.id; }));
        }
        showToggle();
      });
    });
    showToggle();
  }
  function notify(alerts) {
    latestAlerts = alerts;
    if (!alertsOn()) return;
    var known = seen();
    var fresh = alerts.filter(function (a) { return known.indexOf(a.id) < 0; });
    fresh.forEach(function (a) {
      var n = new Notification((a.priority === 'urgent' ? 'Urgent ' : 'High-priority ') + a.type + ' from ' + a.agent,
        { body: a.title, tag: a.id });
      n.onclick = function () { window.focus(); window.location.href = a.url; };
    });
    if (fresh.length) remember(fresh.map(function (a) { return a.id; }));
  }

  // ---- counts ----
  function counts(p) {
    document.title = (p.open > 0 ? '(' + p.open + ') ' : '') + baseTitle;
    var badges = document.querySelectorAll('[data-live-count]');
    for (var i = 0; i < badges.length; i++) badges[i].textContent = p.open > 0 ? ' (' + p.open + ')' : '';
  }

  // ---- page refresh ----
  function live() { return document.querySelector('[data-live]'); }
  function busy(el) {
    var f = document.activeElement;
    var typing = f && el.contains(f) && /^(INPUT|TEXTAREA|SELECT)$/.test(f.tagName) && f.type !== 'checkbox';
    return typing || el.querySelector('input[type=checkbox][name=id]:checked') !== null;
  }
  function offer(el, text) {
    var bar = document.getElementById('live-note');
    if (!bar) {
      bar = document.createElement('p');
      bar.id = 'live-note';
      bar.className = 'notice live-note';
      bar.setAttribute('role', 'status');
      el.parentNode.insertBefore(bar, el);
    }
    bar.textContent = text + ' ';
    var b = document.createElement('button');
    b.type = 'button';
    b.className = 'secondary';
    b.textContent = 'Show';
    b.addEventListener('click', function () { window.location.reload(); });
    bar.appendChild(b);
  }
  function refresh() {
    var el = live();
    if (!el) return;
    var kind = el.getAttribute('data-live');
    if (kind === 'list' && busy(el)) { offer(el, 'The inbox changed.'); return; }
    fetch(window.location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html', 'X-Ma2h-Live': '1' } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var next = doc.querySelector('[data-live]');
        if (!next) return;
        if (kind === 'message') {
          if (next.getAttribute('data-status') === el.getAttribute('data-status') &&
              next.getAttribute('data-claim') === el.getAttribute('data-claim')) return;
          if (dirty) { offer(el, 'This message changed while you were answering it (now ' + next.getAttribute('data-status') + ').'); return; }
        }
        var current = document.activeElement && document.activeElement.getAttribute('href');
        el.replaceWith(document.importNode(next, true));
        var note = document.getElementById('live-note');
        if (note) note.remove();
        if (current) {
          var again = document.querySelector('[data-live] a.title[href="' + current + '"]');
          if (again) { again.focus(); again.parentElement.classList.add('current'); }
        }
      })
      .catch(function () { /* the next pulse tries again */ });
  }
  document.addEventListener('input', function (e) {
    var el = live();
    if (el && el.getAttribute('data-live') === 'message' && el.contains(e.target)) dirty = true;
  });

  function onPulse(e) {
    var p;
    try { p = JSON.parse(e.data); } catch (err) { return; }
    counts(p);
    notify(p.alerts || []);
    if (version !== null && version !== p.version) refresh();
    version = p.version;
    document.documentElement.setAttribute('data-live-version', p.version);
  }
  var source = null;
  function connect() {
    if (source) return;
    source = new EventSource('/inbox/events');
    source.addEventListener('pulse', onPulse);
  }
  // A hidden tab stops reading (each read costs store requests) unless it raises desktop
  // alerts; shown again, it reconnects and its first pulse refreshes whatever changed.
  document.addEventListener('visibilitychange', function () {
    if (document.hidden && !alertsOn() && source) { source.close(); source = null; }
    else if (!document.hidden) connect();
  });
  connect();
})();
