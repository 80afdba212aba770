// The inbox's service worker (issue 41), served as /inbox/sw.js with `Service-Worker-Allowed: /`
// and registered for the whole origin by pwa.js. It keeps the app shell (stylesheet, scripts,
// icons, the offline page) so the installed app opens without a network and says so plainly.
// Pages are never cached: they hold what agents wrote, for one operator, and a stale page could
// show an ask as open that was answered long ago. No answer is ever queued on the device.
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
