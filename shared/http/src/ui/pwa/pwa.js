// Installs the inbox as an app (issue 41): registers the service worker for the whole origin;
// on the Devices page, subscribes this browser to Web Push notifications. An enhancement only:
// every page works without it.
'use strict';
(function () {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  const registered = navigator.serviceWorker.register('/inbox/sw.js', { scope: '/' });
  registered.catch(() => {});

  const box = document.getElementById('push');
  const button = document.getElementById('subscribe');
  if (!box || !button) return;
  const status = document.getElementById('push-status');
  const say = (text) => { if (status) status.textContent = text; };
  if (!('PushManager' in window) || !('Notification' in window)) {
    say('This browser cannot receive push notifications here. On an iPhone or iPad, add the inbox to your Home Screen and open it from there.');
    return;
  }
  button.hidden = false;

  const keyBytes = (b64) => {
    const pad = '='.repeat((4 - (b64.length % 4)) % 4);
    const raw = atob((b64 + pad).replace(/-/g, '+').replace(/_/g, '/'));
    return Uint8Array.from(raw, (c) => c.charCodeAt(0));
  };
  const describe = () => {
    const ua = navigator.userAgent;
    const os = /iPhone|iPad/.test(ua) ? 'iOS' : /Android/.test(ua) ? 'Android' : /Mac/.test(ua) ? 'macOS'
      : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : 'a device';
    const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrome\//.test(ua) ? 'Chrome'
      : /Safari\//.test(ua) ? 'Safari' : 'a browser';
    return `${browser} on ${os}`;
  };

  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      if ((await Notification.requestPermission()) !== 'granted') {
        say('Notifications are not allowed for this site: allow them in the browser\'s settings, then try again.');
        return;
      }
      const reg = await navigator.serviceWorker.ready;
      const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(box.dataset.key) });
      const form = new URLSearchParams({ csrf: box.dataset.csrf, action: 'subscribe', label: describe(), subscription: JSON.stringify(sub) });
      const r = await fetch('/inbox/devices', { method: 'POST', body: form, credentials: 'same-origin' });
      if (r.ok) { window.location.assign(r.url); return; }
      say('The Hub did not take this subscription; try again.');
    } catch (e) {
      say(`This browser could not subscribe: ${e && e.message ? e.message : e}`);
    } finally {
      button.disabled = false;
    }
  });
})();
