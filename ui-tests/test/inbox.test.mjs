// The web inbox in a real browser (headless Debian Chromium via playwright-core).
// scripts/ui-test.sh starts a Hub, submits the asks and exports what this file needs:
// HUB_URL, AGENT_KEY, OPERATOR_KEY, SELECT_ID, INPUT_ID, XSS_ID, URGENT_ID, PROPOSED_ID,
// NOT_MINE_ID, PUSHFAIL_ID, SCREENSHOT_DIR. Screenshots at phone (375 px) and desktop width land in
// SCREENSHOT_DIR; docs/inbox.md shows two of them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, HUB, SHOTS, launch } from '../lib/browser.mjs';

let browser, context, page, desktop;
const dialogs = [];

before(async () => {
  browser = await launch();
  // Phone width: every page must read without sideways scrolling.
  context = await browser.newContext({ viewport: { width: 375, height: 780 } });
  page = await context.newPage();
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.setDefaultTimeout(10_000);
  desktop = await browser.newContext({ viewport: { width: 1280, height: 900 } });
});

// The same page at desktop width, logged in with the same session cookie.
async function desktopShot(path, name) {
  await desktop.addCookies(await context.cookies());
  const p = await desktop.newPage();
  await p.goto(`${HUB}${path}`);
  await p.screenshot({ path: `${SHOTS}/${name}`, fullPage: true });
  await p.close();
}

async function inlineScripts() {
  return page.evaluate(() => [...document.querySelectorAll('script')]
    .filter((s) => !s.src || !['/inbox/pwa.js', '/inbox/keys.js', '/inbox/live.js', '/inbox/passkeys.js'].includes(new URL(s.src).pathname)).length);
}

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
  assert.equal(await inlineScripts(), 0, 'no script but the Hub\'s own pwa.js, keys.js, live.js and passkeys.js');
  await noSidewaysScroll();
  await page.screenshot({ path: `${SHOTS}/inbox-phone.png`, fullPage: true });
  await desktopShot('/inbox', 'inbox-desktop.png');
});

test('rows show urgency, expiring soon, a preview and whether I can answer', async () => {
  await page.goto(`${HUB}/inbox`);
  const urgent = page.locator('li.item', { hasText: 'Roll back the payments deploy?' });
  assert.match(await urgent.getAttribute('class'), /prio-urgent/);
  assert.match(await urgent.getAttribute('class'), /due-soon/);
  const edge = await urgent.evaluate((li) => getComputedStyle(li).borderLeftColor);
  assert.notEqual(edge, 'rgba(0, 0, 0, 0)', 'an urgent row has a coloured edge');
  assert.match(await urgent.innerText(), /expires soon/);
  assert.match(await urgent.innerText(), /Error rate is 4% since build 412/);
  assert.match(await urgent.innerText(), /Roll back · Keep build 412 · Page the owner/);
  assert.match(await urgent.innerText(), /you can answer/);
  const notMine = page.locator('li.item', { hasText: 'Approve the budget?' });
  assert.match(await notMine.innerText(), /view only/);
  assert.doesNotMatch(await notMine.innerText(), /you can answer/);
  assert.doesNotMatch(await page.locator('main').innerText(), /\b1 (asks|tasks)\b/);
});

test('keyboard: j/k move between rows, Enter opens, a digit picks an option', async () => {
  await page.goto(`${HUB}/inbox`);
  const titles = await page.locator('ul.items li a.title').allInnerTexts();
  await page.keyboard.press('j');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), titles[0]);
  await page.keyboard.press('j');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), titles[1]);
  await page.keyboard.press('k');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), titles[0]);
  await page.keyboard.press('Enter');
  await page.waitForURL(new RegExp(`/inbox/${env('URGENT_ID')}$`));
  await page.keyboard.press('2');
  assert.equal(await page.getByLabel(/Keep build 412/).isChecked(), true);
  await page.keyboard.press('1');
  assert.equal(await page.getByLabel(/Roll back/).isChecked(), true);
});

test('the message page shows the stakes and long URLs wrap at phone width', async () => {
  await page.goto(`${HUB}/inbox/${env('URGENT_ID')}`);
  const stakes = await page.locator('section.stakes').innerText();
  assert.match(stakes, /“Keep build 412” is applied automatically/);
  assert.match(stakes, /human:tester/);
  assert.match(stakes, /run-ui/);
  await noSidewaysScroll();
  await page.screenshot({ path: `${SHOTS}/message-phone.png`, fullPage: true });
  await desktopShot(`/inbox/${env('URGENT_ID')}`, 'message-desktop.png');
});

test('a select submitted with nothing chosen marks the option group', async () => {
  await page.goto(`${HUB}/inbox/${env('URGENT_ID')}`);
  await page.getByRole('button', { name: 'Submit answer' }).click();
  await page.locator('#value-err').waitFor();
  assert.match(await page.locator('fieldset.invalid').innerText(), /Choose one of the options/);
  assert.equal((await agentGet(env('URGENT_ID'))).status, 'open');
  await page.screenshot({ path: `${SHOTS}/select-unchosen.png`, fullPage: true });
});

test('a proposed answer is prefilled and accepted as-is', async () => {
  await page.goto(`${HUB}/inbox/${env('PROPOSED_ID')}`);
  assert.equal(await page.getByLabel(/Replicas/).inputValue(), '6');
  assert.match(await page.locator('section.stakes').innerText(), /replicas = 6, region = eu/);
  await page.getByRole('button', { name: 'Accept as proposed' }).click();
  await page.getByText('Your answer was recorded.').waitFor();
  const got = await agentGet(env('PROPOSED_ID'));
  assert.deepEqual(got.response.response.value, { replicas: 6, region: 'eu' });
  assert.equal(got.response.response.edited, false);
});

test('FYI lists the notifies with their time', async () => {
  await page.getByRole('link', { name: 'FYI' }).click();
  await page.getByRole('heading', { name: 'FYI' }).waitFor();
  const text = await page.locator('main').innerText();
  assert.match(text, /Nightly build is green/);
  assert.match(text, /sent .* ago · \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
  assert.doesNotMatch(text, /Roll back the payments deploy/);
});

test('answer a select ask; the agent GET shows the answer', async () => {
  await page.goto(`${HUB}/inbox`);
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
  assert.match(await page.locator('#in-replicas-err').innerText(), /must be at least 1/);
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
  assert.equal(await inlineScripts(), 0);
  assert.equal(await body.locator('script').count(), 0);
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

test('history shows the chosen label, actor, times and a failed push with its reason; logout ends the session', async () => {
  let text = '';
  for (let i = 0; i < 50; i += 1) { // the failed push settles after its retries (≈ 1 s)
    await page.goto(`${HUB}/inbox/history`);
    text = await page.locator('main').innerText();
    if (/push failed:/.test(text)) break;
    await page.waitForTimeout(200);
  }
  assert.match(text, /Pick a release channel/);
  assert.match(text, /Chose “Stable” \(stable\)/);
  assert.match(text, /by human:tester/);
  assert.match(text, /resolved .* ago · \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
  assert.match(text, /pull/);
  assert.match(text, /push failed: .+ — the agent can still pull it/);
  await noSidewaysScroll();
  await page.screenshot({ path: `${SHOTS}/history-phone.png`, fullPage: true });
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login$/);
  await page.goto(`${HUB}/inbox`);
  assert.match(page.url(), /\/login$/);
});
