// Installs the inbox as an app (issue 41): registers the service worker for the whole origin.
// An enhancement only: every page works without it.
'use strict';
if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register('/inbox/sw.js', { scope: '/' }).catch(() => {});
}
