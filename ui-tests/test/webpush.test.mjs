// Issue 41 in a real browser: a Web Push notification end to end. The Devices page subscribes a
// device (the push service's stand-in hands out the subscription a browser would get from Chrome's
// push service, which this machine cannot reach); the Hub pushes a routed ask to it, encrypted
// and VAPID-signed (the stand-in checks both and decrypts); the payload is delivered to this
// browser's service worker (DevTools' ServiceWorker.deliverPushMessage), which shows the
// notification with its answer buttons; a button press runs the worker's own handler: it POSTs
// the token, the ask is answered as the operator, and the notification says so. A second press
// is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, HUB, SHOTS, launch } from '../lib/browser.mjs';

const PUSH = env('PUSH_URL');
let browser, context, page;

before(async () => {
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  await context.grantPermissions(['notifications'], { origin: HUB });
  page = await context.newPage();
  await page.goto(`${HUB}/login`);
  await page.getByLabel(/API key/i).fill(env('OPERATOR_KEY'));
  await page.getByRole('button', { name: /log in/i }).click();
  await page.waitForURL(`${HUB}/inbox`);
});

after(async () => { await browser?.close(); });

async function waitFor(what, probe, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a routed ask reaches the device as a notification whose button answers it once', async () => {
  // the Devices page: the button is offered; subscribe the stand-in's subscription through the page's own form post
  await page.goto(`${HUB}/inbox/devices`);
  await page.getByRole('button', { name: 'Notify this device' }).waitFor();
  const sub = await (await fetch(`${PUSH}/subscribe`, { method: 'POST' })).json();
  const status = await page.evaluate(async (subscription) => {
    const box = document.getElementById('push');
    const form = new URLSearchParams({ csrf: box.dataset.csrf, action: 'subscribe', label: 'Test phone', subscription: JSON.stringify(subscription) });
    return (await fetch('/inbox/devices', { method: 'POST', body: form })).status;
  }, sub);
  assert.equal(status, 200, 'subscribed (the redirect followed)');
  await page.reload();
  assert.match(await page.locator('#device-list').innerText(), /Test phone/);
  await page.screenshot({ path: `${SHOTS}/devices-phone.png`, fullPage: true });

  // an ask tagged for the Web Push route
  const r = await fetch(`${HUB}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env('AGENT_KEY')}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      ma2h_version: '0.5', type: 'ask', created_at: '2026-01-01T00:00:00Z', idempotency_key: `push-${Date.now()}`,
      agent: { id: 'uibot', run_id: 'run-push', runtime: 'cli' }, title: 'Deploy build 43?', priority: 'urgent',
      tags: ['ui-push'], body: 'Canary is green.',
      request: { mode: 'confirm', allowed_resolvers: ['human:tester'] },
    }),
  });
  const id = (await r.json()).id;
  const push = await waitFor('the push', async () => {
    const got = await (await fetch(`${PUSH}/received`)).json();
    return got.find((p) => p.payload.id === id);
  });
  assert.equal(push.urgency, 'high');
  assert.equal(push.payload.title, 'Deploy build 43?');
  assert.deepEqual(push.payload.actions.map((a) => a.title), ['Approve', 'Deny']);

  // into the browser's service worker, as the push service would deliver it
  const cdp = await context.newCDPSession(page);
  const registrations = [];
  const versions = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
  cdp.on('ServiceWorker.workerVersionUpdated', (e) => versions.push(...e.versions));
  await cdp.send('ServiceWorker.enable');
  const reg = await waitFor('the registration', async () => registrations.find((x) => x.scopeURL === `${HUB}/`));
  const worker = await waitFor('the worker', async () => context.serviceWorkers()[0]);
  await waitFor('the worker to activate', async () =>
    versions.some((v) => v.registrationId === reg.registrationId && v.status === 'activated'));
  // A push delivered while Chromium is still starting the worker can be dropped (seen on a busy
  // CI machine): deliver it again every few seconds until it shows — the notification's tag is
  // the ask's id, so a repeat replaces it rather than adding one.
  let probes = 0;
  const shown = await waitFor('the notification', async () => {
    if (probes++ % 30 === 0) {
      await cdp.send('ServiceWorker.deliverPushMessage', { origin: HUB, registrationId: reg.registrationId, data: JSON.stringify(push.payload) });
    }
    return worker.evaluate(async () => {
      const [n] = await self.registration.getNotifications();
      return n && { title: n.title, body: n.body, actions: n.actions.map((a) => a.title), tag: n.tag };
    });
  }, 20000);
  assert.equal(shown.title, 'Deploy build 43?');
  assert.deepEqual(shown.actions, ['Approve', 'Deny']);
  assert.equal(shown.tag, id);

  // press "Approve": the worker's own click handler POSTs the token
  const pressed = () => worker.evaluate(async () => {
    const [n] = await self.registration.getNotifications();
    const data = n.data.buttons.length ? n.data : self.__last;
    self.__last = data;
    return clicked(n.title, data, 'answer-0');
  });
  const first = await pressed();
  assert.equal(first.outcome, 'answered', JSON.stringify(first));
  const read = await (await fetch(`${HUB}/v1/messages/${id}`, { headers: { authorization: `Bearer ${env('AGENT_KEY')}` } })).json();
  assert.equal(read.status, 'answered');
  assert.equal(read.response.response.actor, 'human:tester');
  const after = await worker.evaluate(async () => (await self.registration.getNotifications()).map((n) => n.body));
  assert.deepEqual(after, ['Answered: Approve.'], 'the notification says what happened');
  const second = await pressed();
  assert.equal(second.outcome, 'already_used');
});
