// Issue 41 in a real browser: the inbox installs as an app — a manifest Chromium accepts, with
// icons it can fetch, a service worker that controls the whole origin — and the installed app,
// without a network, shows its offline page (never a cached inbox page), then the inbox again
// once back online. scripts/ui-test.sh starts the Hub.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, HUB, SHOTS, launch } from '../lib/browser.mjs';

let browser, phone;

before(async () => {
  browser = await launch();
  phone = await browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  const p = await phone.newPage();
  await p.goto(`${HUB}/login`);
  await p.getByLabel(/API key/i).fill(env('OPERATOR_KEY'));
  await p.getByRole('button', { name: /log in/i }).click();
  await p.waitForURL(`${HUB}/inbox`);
  await p.close();
});

after(async () => { await browser?.close(); });

test('the inbox is installable: a manifest with icons, and a service worker for the whole origin', async () => {
  const page = await phone.newPage();
  await page.goto(`${HUB}/inbox`);
  const href = await page.locator('link[rel="manifest"]').getAttribute('href');
  const manifest = await page.evaluate(async (u) => (await fetch(u)).json(), href);
  assert.equal(manifest.display, 'standalone');
  assert.equal(manifest.start_url, '/inbox');
  const sizes = manifest.icons.map((i) => `${i.sizes} ${i.purpose}`);
  assert.ok(sizes.includes('192x192 any') && sizes.includes('512x512 any') && sizes.includes('512x512 maskable'), sizes);
  for (const icon of manifest.icons) {
    const r = await page.evaluate(async (u) => { const x = await fetch(u); return [x.status, x.headers.get('content-type')]; }, icon.src);
    assert.deepEqual(r, [200, 'image/png'], icon.src);
  }
  // the worker takes the whole origin (the list is /inbox, outside /inbox/)
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  assert.equal(scope, `${HUB}/`);
  await page.reload();
  assert.equal(await page.evaluate(() => Boolean(navigator.serviceWorker.controller)), true, 'the page is controlled');
  await page.close();
});

test('offline, the app shows its offline page instead of a stale inbox; online again, the inbox', async () => {
  const page = await phone.newPage();
  await page.goto(`${HUB}/inbox`);
  await page.evaluate(async () => navigator.serviceWorker.ready);
  await page.reload(); // controlled from here on
  await phone.setOffline(true);
  try {
    await page.goto(`${HUB}/inbox/history`);
    await page.getByRole('heading', { name: 'You are offline' }).waitFor();
    assert.match(await page.locator('main').innerText(), /No answer is kept on this device/);
    const styled = await page.evaluate(() => getComputedStyle(document.body).fontFamily);
    assert.notEqual(styled, '', 'the stylesheet came from the cache');
    await page.screenshot({ path: `${SHOTS}/offline-phone.png` });
  } finally {
    await phone.setOffline(false);
  }
  await page.goto(`${HUB}/inbox`);
  await page.getByRole('heading', { name: /Open/ }).first().waitFor();
  await page.close();
});
