// Issue 41 in a real browser: passkeys with Chromium's virtual authenticator (DevTools'
// WebAuthn domain: a CTAP2 platform authenticator with resident keys and user verification).
// The operator adds a passkey on the Devices page, logs out, logs in with it (no key typed), and
// answers an ask that a policy marks as needing a passkey: the answer button opens the passkey
// prompt, and the answer applies only with it. The Hub is opened at http://localhost:<port> —
// browsers offer WebAuthn only to a secure context named by a domain (127.0.0.1 is served as
// localhost by the Hub's relying party).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, HUB, SHOTS, launch } from '../lib/browser.mjs';

const LOCAL = HUB.replace('127.0.0.1', 'localhost');
let browser, context, page, cdp, authenticatorId;

before(async () => {
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true,
      isUserVerified: true, automaticPresenceSimulation: true,
    },
  }));
  await page.goto(`${LOCAL}/login`);
  await page.getByLabel(/API key/i).fill(env('OPERATOR_KEY'));
  await page.getByRole('button', { name: /^log in$/i }).click();
  await page.waitForURL(`${LOCAL}/inbox`);
});

after(async () => { await browser?.close(); });

test('a passkey added on the Devices page logs in without a key', async () => {
  await page.goto(`${LOCAL}/inbox/devices`);
  await page.getByLabel(/^Name/).fill('Test laptop');
  await page.getByRole('button', { name: 'Add a passkey' }).click();
  await page.waitForURL(/\/inbox\/devices\?done=Passkey\+added/, { timeout: 10000 }).catch(async (e) => {
    const said = await page.locator('[data-passkey-status], .notice').allInnerTexts();
    const options = await page.locator('form[data-passkey]').getAttribute('data-passkey');
    throw new Error(`${e.message}: the page says ${JSON.stringify(said)} (options ${options})`);
  });
  assert.match(await page.locator('#passkey-list').innerText(), /Test laptop/);
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  assert.equal(credentials.length, 1, 'the authenticator holds one passkey');
  assert.equal(credentials[0].isResidentCredential, true, 'discoverable: no user name needed to log in');
  await page.locator('#passkeys').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${SHOTS}/passkeys-desktop.png`, fullPage: true });

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login/);
  await page.getByRole('button', { name: 'Log in with a passkey' }).click();
  await page.waitForURL(`${LOCAL}/inbox`);
  assert.match(await page.locator('.who').innerText(), /human:tester/);
});

test('an ask a passkey policy gates is answered only through the passkey prompt', async () => {
  const r = await fetch(`${HUB}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env('AGENT_KEY')}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      ma2h_version: '0.5', type: 'ask', created_at: '2026-01-01T00:00:00Z', idempotency_key: `pk-${Date.now()}`,
      agent: { id: 'uibot', run_id: 'run-pk', runtime: 'cli' }, title: 'Rotate the production database password?',
      priority: 'urgent', tags: ['ui-passkey'],
      request: { mode: 'confirm', allowed_resolvers: ['human:tester'] },
    }),
  });
  assert.ok(r.ok, `submitted: ${r.status}`);
  const { id } = await r.json();

  // the API refuses it without a passkey
  const api = await fetch(`${HUB}/v1/messages/${id}/resolve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env('OPERATOR_KEY')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ resolution: 'answered', value: 'approve' }),
  });
  assert.equal(api.status, 403);
  assert.match((await api.json()).error.message, /passkey/);

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${LOCAL}/inbox/${id}`);
  assert.match(await page.locator('#step-up-note').innerText(), /passkey/);
  await page.screenshot({ path: `${SHOTS}/step-up-phone.png`, fullPage: true });
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.waitForURL(new RegExp(`/inbox/${id}\\?done=1`));
  const read = await (await fetch(`${HUB}/v1/messages/${id}`, { headers: { authorization: `Bearer ${env('AGENT_KEY')}` } })).json();
  assert.equal(read.status, 'answered');
  assert.equal(read.response.response.actor, 'human:tester');
  assert.equal(read.response.response.value, 'approve');
  await page.setViewportSize({ width: 1280, height: 900 });
});
