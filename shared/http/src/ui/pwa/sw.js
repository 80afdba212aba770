// The inbox's service worker (issue 41), served as /inbox/sw.js with `Service-Worker-Allowed: /`
// and registered for the whole origin by pwa.js. It keeps the app shell (stylesheet, scripts,
// icons, the offline page) so the installed app opens without a network and says so plainly.
// Pages are never cached: they hold what agents wrote, for one operator, and a stale page could
// show an ask as open that was answered long ago. No answer is ever queued on the device.
//
// It also shows the Hub's Web Push notifications. A notification's answer button POSTs its
// single-use token to /inbox/push/answer — never a GET, never a URL — and the notification is
// replaced by what came of it (answered; already answered by someone else; expired; …).
'use strict';

const SHELL = 'ma2h-shell-v1';
const OFFLINE = '/inbox/offline';
const ASSETS = [
  '/inbox/style.css', '/inbox/keys.js', '/inbox/live.js', '/inbox/pwa.js', OFFLINE,
  '/inbox/icons/icon-192.png', '/inbox/icons/icon-512.png',
];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(SHELL).then((cache) => cache.addAll(ASSETS)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== SHELL).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === 'navigate') {
    // a page: the network, or the offline page when there is none
    event.respondWith(fetch(request).catch(() => caches.match(OFFLINE)));
    return;
  }
  if (ASSETS.includes(url.pathname)) {
    // the shell: the network's copy when it answers (and keep it), the cached one when not
    event.respondWith(
      fetch(request)
        .then((response) => {
          if (response.ok) {
            const copy = response.clone();
            caches.open(SHELL).then((cache) => cache.put(request, copy));
          }
          return response;
        })
        .catch(() => caches.match(request)),
    );
  }
  // everything else (the API, /inbox/live, answers) goes to the network untouched
});

// ---- Web Push (issue 41) ----

const ICON = '/inbox/icons/icon-192.png';

self.addEventListener('push', (event) => {
  let data = {};
  try { data = event.data ? event.data.json() : {}; } catch (e) { data = {}; }
  event.waitUntil(show(data));
});

/** Show one payload of the Hub (`{title, body, tag, url, urgent, actions: [{action, title, token}]}`). */
function show(data) {
  const buttons = Array.isArray(data.actions) ? data.actions : [];
  return self.registration.showNotification(data.title || 'MA2H inbox', {
    body: data.body || '',
    tag: data.tag || undefined,
    renotify: Boolean(data.tag) && data.kind !== 'outcome',
    requireInteraction: Boolean(data.urgent),
    icon: ICON,
    badge: ICON,
    data: { id: data.id, url: data.url || '/inbox', buttons },
    actions: buttons.map((b) => ({ action: b.action, title: b.title })),
  });
}

self.addEventListener('notificationclick', (event) => {
  const n = event.notification;
  n.close();
  event.waitUntil(clicked(n.title, n.data || {}, event.action));
});

/** A click: an answer button answers; anything else opens the message. */
function clicked(title, data, action) {
  const chosen = (data.buttons || []).find((b) => b.action === action);
  return chosen ? answer(title, data, chosen) : open(data.url || '/inbox');
}

/** POST the button's token; replace the notification with what came of it. Returns the outcome. */
async function answer(title, data, chosen) {
  let result;
  try {
    const r = await fetch('/inbox/push/answer', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: chosen.token }),
      credentials: 'omit',
    });
    result = await r.json();
  } catch (e) {
    result = { outcome: 'offline' };
  }
  // a policy asks for a passkey: the answer is confirmed on the message's page instead
  if (result.outcome === 'step_up' && result.url) {
    await open(result.url);
    return result;
  }
  const said = {
    answered: `Answered: ${chosen.title}.`,
    already_used: 'This button was already used.',
    refused: `Not answered: ${result.reason || 'refused'}.`,
    expired: 'This question has expired: nothing was answered.',
    gone: 'This message no longer exists.',
    invalid: 'This button is not valid: nothing was answered.',
    unavailable: 'The Hub could not record it: nothing was answered. Try again from the inbox.',
    offline: 'No network: nothing was answered.',
  }[result.outcome] || 'Open the inbox to see what happened.';
  await self.registration.showNotification(title, {
    body: said, tag: data.id || undefined, icon: ICON, badge: ICON, data: { id: data.id, url: data.url || '/inbox', buttons: [] },
  });
  return result;
}

async function open(url) {
  const target = new URL(url, self.location.origin);
  if (target.origin !== self.location.origin) return;
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const w of windows) {
    if (new URL(w.url).pathname === target.pathname && 'focus' in w) return w.focus();
  }
  return self.clients.openWindow(target.href);
}
