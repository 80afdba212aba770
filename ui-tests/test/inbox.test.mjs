// The web inbox in a real browser (headless Debian Chromium via playwright-core).
// scripts/ui-test.sh starts a Hub, submits the asks and exports what this file needs:
// HUB_URL, AGENT_KEY, OPERATOR_KEY, SELECT_ID, INPUT_ID, XSS_ID, SCREENSHOT_DIR.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const env = (k) => {
  const v = process.env[k];
  assert.ok(v, `${k} must be set (run scripts/ui-test.sh)`);
  return v;
};
const HUB = env('HUB_URL');
const SHOTS = process.env.SCREENSHOT_DIR || 'artifacts';
mkdirSync(SHOTS, { recursive: true });

let browser, context, page;
const dialogs = [];

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // Phone width: every page must read without sideways scrolling.
  context = await browser.newContext({ viewport: { width: 375, height: 780 } });
  page = await context.newPage();
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.setDefaultTimeout(10_000);
});

after(async () => { await browser?.close(); });

async function agentGet(id) {
  const r = await fetch(`${HUB}/v1/messages/${id}`, { headers: { authorization: `Bearer ${env('AGENT_KEY')}` } });
  assert.equal(r.status, 200);
  return r.json();
}

async function noSidewaysScroll() {
  const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(scroll <= width + 1, `page is ${scroll}px wide at ${width}px`);
}

test('log in with the keyboard and land on the inbox', async () => {
  await page.goto(`${HUB}/inbox`);
  assert.match(page.url(), /\/login$/);
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'api_key', 'the key field has focus');
  await page.keyboard.type(env('OPERATOR_KEY'));
  await page.keyboard.press('Enter');
  await page.waitForURL(`${HUB}/inbox`);
  await page.getByRole('heading', { name: 'Open messages' }).waitFor();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
  assert.equal(await page.locator('script').count(), 0, 'the inbox ships no script');
  await noSidewaysScroll();
  await page.screenshot({ path: `${SHOTS}/inbox.png`, fullPage: true });
});

test('answer a select ask; the agent GET shows the answer', async () => {
  await page.getByRole('link', { name: 'Pick a release channel' }).click();
  await page.getByText('Ship to everyone at once.').waitFor();
  await page.getByLabel(/Stable/).check();
  await page.getByLabel(/^Comment/).fill('Go for stable');
  await noSidewaysScroll();
  await page.screenshot({ path: `${SHOTS}/select-ask.png`, fullPage: true });
  await page.getByRole('button', { name: 'Submit answer' }).click();
  await page.getByText('Your answer was recorded.').waitFor();
  const got = await agentGet(env('SELECT_ID'));
  assert.equal(got.status, 'answered');
  assert.equal(got.response.response.value, 'stable');
  assert.equal(got.response.response.actor, 'human:tester');
  assert.equal(got.response.response.comment, 'Go for stable');
});

test('an input ask shows a validation message for an invalid value, then accepts a valid one', async () => {
  await page.goto(`${HUB}/inbox/${env('INPUT_ID')}`);
  await page.getByLabel(/Replicas/).fill('0');
  await page.getByRole('button', { name: 'Submit answer' }).click();
  await page.locator('#in-replicas-err').waitFor();
  assert.match(await page.locator('#in-replicas-err').innerText(), /minimum/);
  assert.equal((await agentGet(env('INPUT_ID'))).status, 'open');
  await page.screenshot({ path: `${SHOTS}/input-invalid.png`, fullPage: true });
  await page.getByLabel(/Replicas/).fill('3');
  await page.getByRole('button', { name: 'Submit answer' }).click();
  await page.getByText('Your answer was recorded.').waitFor();
  const got = await agentGet(env('INPUT_ID'));
  assert.equal(got.status, 'answered');
  assert.deepEqual(got.response.response.value, { replicas: 3 });
});

test('a hostile body renders inert', async () => {
  await page.goto(`${HUB}/inbox/${env('XSS_ID')}`);
  const body = page.locator('section.body');
  await body.waitFor();
  assert.equal(await page.locator('script').count(), 0);
  assert.equal(await page.locator('img').count(), 0);
  assert.equal(await page.locator('a[href^="javascript:"]').count(), 0);
  assert.match(await body.innerText(), /<script>/, 'the markup is shown as text');
  assert.match(await body.innerText(), /↗ external: example\.com/);
  const link = page.locator('section.body a[href="https://example.com/docs"]');
  assert.equal(await link.getAttribute('rel'), 'noopener noreferrer nofollow');
  await page.waitForTimeout(300);
  assert.deepEqual(dialogs, [], 'no alert() ran');
  await page.screenshot({ path: `${SHOTS}/hostile-body.png`, fullPage: true });
});

test('a POST without the CSRF token is refused', async () => {
  const r = await context.request.post(`${HUB}/inbox/${env('XSS_ID')}/resolve`, {
    form: { act: 'declined' }, maxRedirects: 0,
  });
  assert.equal(r.status(), 403);
  assert.equal((await agentGet(env('XSS_ID'))).status, 'open');
});

test('history shows the answer, its actor and delivery state; logout ends the session', async () => {
  await page.goto(`${HUB}/inbox/history`);
  const text = await page.locator('main').innerText();
  assert.match(text, /Pick a release channel/);
  assert.match(text, /by human:tester/);
  assert.match(text, /pull/);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login$/);
  await page.goto(`${HUB}/inbox`);
  assert.match(page.url(), /\/login$/);
});
