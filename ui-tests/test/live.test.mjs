// Issue 39 in a real browser: the live inbox (list, tab title, message page, desktop alerts),
// the layout (no sideways scrolling, no word broken in a table cell, stacked cards and folded
// filters on a phone, no keyboard hint on a touch screen), previews from rendered Markdown, and
// the safe decisions (kill-switch confirmation, reveal before answering a sensitive ask).
// scripts/ui-test.sh starts the Hub; this file submits its own messages with AGENT_KEY.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, HUB, SHOTS, launch } from '../lib/browser.mjs';
const AGENT = { id: 'uibot', run_id: 'run-live', runtime: 'cli' };

let browser, phone, desktop, cookies;

// Desktop notifications are recorded, not shown: the page's Notification is replaced before
// any script runs, with permission already granted.
function recordNotifications() {
  window.__notes = [];
  class Recorded {
    constructor(title, opts) { window.__notes.push({ title, body: opts && opts.body, tag: opts && opts.tag }); }
    static get permission() { return 'granted'; }
    static requestPermission() { return Promise.resolve('granted'); }
  }
  window.Notification = Recorded;
}

before(async () => {
  browser = await launch();
  phone = await browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await desktop.addInitScript(recordNotifications);
  // log in once (desktop), share the session cookie with the phone context
  const p = await desktop.newPage();
  await p.goto(`${HUB}/login`);
  await p.getByLabel(/API key/i).fill(env('OPERATOR_KEY'));
  await p.getByRole('button', { name: /log in/i }).click();
  await p.waitForURL(`${HUB}/inbox`);
  cookies = await desktop.cookies();
  await phone.addCookies(cookies);
  await p.close();
});

after(async () => { await browser?.close(); });

let seq = 0;
async function submit(fields) {
  seq += 1;
  const envelope = { ma2h_version: '0.5', created_at: '2026-01-01T00:00:00Z', agent: AGENT, ...fields };
  if (envelope.type !== 'notify') envelope.idempotency_key = `live-${Date.now()}-${seq}`;
  const r = await fetch(`${HUB}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env('AGENT_KEY')}`, 'content-type': 'application/json' },
    body: JSON.stringify(envelope),
  });
  const text = await r.text();
  assert.ok(r.status === 201 || r.status === 202, `${r.status} ${text}`);
  return JSON.parse(text).id;
}

const mine = (title, extra = {}) => submit({
  type: 'ask', title, priority: 'urgent',
  request: { mode: 'confirm', allowed_resolvers: ['human:tester'] }, ...extra,
});

async function noSidewaysScroll(page, what) {
  const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(scroll <= width + 1, `${what}: page is ${scroll}px wide at ${width}px`);
}

// Every word of every table cell (ids, code and URLs excepted: they are not words) sits on one
// line: a word the layout split has more than one line box.
async function brokenWords(page) {
  return page.evaluate(() => {
    const broken = [];
    for (const cell of document.querySelectorAll('main td, main th')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest('code, .ext, .id, a.url')) continue;
        const re = /\S{2,}/g;
        let m;
        while ((m = re.exec(node.data)) !== null) {
          const r = document.createRange();
          r.setStart(node, m.index);
          r.setEnd(node, m.index + m[0].length);
          const tops = new Set([...r.getClientRects()].map((b) => Math.round(b.top)));
          if (tops.size > 1) broken.push(m[0]);
        }
      }
    }
    return broken;
  });
}

test('the open list, its counts and the tab title update without a reload', async () => {
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox`);
  await page.waitForFunction(() => document.documentElement.hasAttribute('data-live-version'));
  await page.evaluate(() => { window.__sameDocument = true; });
  const before = await page.title();
  const title = `Live arrival ${Date.now()}`;
  await mine(title);
  await page.getByRole('link', { name: title }).waitFor({ timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  await page.waitForFunction((t) => document.title !== t, before);
  assert.match(await page.title(), /^\(\d+\) Inbox · MA2H inbox$/);
  const n = Number((await page.title()).match(/^\((\d+)\)/)[1]);
  assert.match(await page.locator('.counts').innerText(), new RegExp(`^${n} open`));
  assert.match(await page.locator('nav a[href="/inbox"]:not(.brand)').innerText(), new RegExp(`Open \\(${n}\\)`));
  await page.screenshot({ path: `${SHOTS}/live-inbox-desktop.png` });
  await page.close();
});

test('a message answered elsewhere updates the page its reader has open', async () => {
  const id = await mine(`Answered elsewhere ${Date.now()}`);
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/${id}`);
  await page.waitForFunction(() => document.documentElement.hasAttribute('data-live-version'));
  const r = await fetch(`${HUB}/v1/messages/${id}/resolve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env('OPERATOR_KEY')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ resolution: 'answered', value: 'approve' }),
  });
  assert.equal(r.status, 200);
  await page.locator('[data-live=message][data-status=answered]').waitFor({ timeout: 15_000 });
  assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0, 'the answer form is gone');
  await page.close();
});

test('opt-in desktop alerts fire for a new urgent ask I may answer, not for one I may not', async () => {
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox`);
  const toggle = page.locator('#alerts');
  await toggle.waitFor();
  assert.equal(await toggle.innerText(), 'Desktop alerts: off');
  await page.waitForFunction(() => document.documentElement.hasAttribute('data-live-version'));
  await toggle.click();
  await page.waitForFunction(() => document.getElementById('alerts').textContent === 'Desktop alerts: on');
  assert.equal(await page.evaluate(() => window.__notes.length), 0, 'what is listed already alerts no one');
  const other = `Not for me ${Date.now()}`;
  await mine(other, { request: { mode: 'confirm', allowed_resolvers: ['human:someone-else'] } });
  const title = `Page me ${Date.now()}`;
  const id = await mine(title);
  await page.waitForFunction(() => window.__notes.length > 0, null, { timeout: 15_000 });
  const notes = await page.evaluate(() => window.__notes);
  assert.deepEqual(notes.map((n) => n.body), [title], JSON.stringify(notes));
  assert.equal(notes[0].title, 'Urgent ask from uibot');
  assert.equal(notes[0].tag, id);
  // navigating does not alert again for what was already alerted
  await page.goto(`${HUB}/inbox/history`);
  await page.waitForFunction(() => document.documentElement.hasAttribute('data-live-version'));
  await page.waitForTimeout(500);
  assert.equal(await page.evaluate(() => window.__notes.length), 0);
  await page.close();
});

test('no page scrolls sideways and no table cell breaks a word, at desktop and phone sizes', async () => {
  // a live session gives the agent page its sessions table
  const r = await fetch(`${HUB}/v1/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env('AGENT_KEY')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'layout check' }),
  });
  assert.equal(r.status, 201);
  const id = await mine('Layout check', { body: 'See `users_legacy`.' });
  const paths = ['/inbox', '/inbox/history', '/inbox/fyi', '/inbox/agents', '/inbox/agents/uibot',
    '/inbox/channels', `/inbox/${id}`, '/inbox/audit'];
  for (const [ctx, size] of [[desktop, 'desktop'], [phone, 'phone']]) {
    const page = await ctx.newPage();
    for (const path of paths) {
      await page.goto(`${HUB}${path}`);
      await noSidewaysScroll(page, `${path} (${size})`);
      assert.deepEqual(await brokenWords(page), [], `${path} (${size}) breaks words`);
    }
    await page.goto(`${HUB}/inbox/agents/uibot`);
    await page.screenshot({ path: `${SHOTS}/agent-${size}.png`, fullPage: true });
    await page.close();
  }
});

test('on a phone the tables are cards, the filters fold and the keyboard hint is hidden', async () => {
  const page = await phone.newPage();
  await page.goto(`${HUB}/inbox/agents/uibot`);
  const row = page.locator('table.cards tbody tr').first();
  assert.equal(await row.evaluate((tr) => getComputedStyle(tr).display), 'block');
  const label = await row.locator('td').first().evaluate((td) => getComputedStyle(td, '::before').content);
  assert.equal(label, '"Session"', 'each cell carries its column label');
  await page.goto(`${HUB}/inbox`);
  assert.equal(await page.locator('form.filters').isVisible(), false, 'folded');
  await page.getByText('Filters', { exact: true }).click();
  assert.equal(await page.locator('form.filters').isVisible(), true);
  assert.equal(await page.locator('.kbd-help').isVisible(), false, 'no keyboard hint on a touch screen');
  await page.screenshot({ path: `${SHOTS}/inbox-phone-live.png` });
  const wide = await desktop.newPage();
  await wide.goto(`${HUB}/inbox`);
  assert.equal(await wide.locator('form.filters').isVisible(), true, 'never folded on a desktop');
  assert.equal(await wide.locator('label.fold-label').isVisible(), false);
  await wide.close();
  await page.close();
});

test('a row previews the rendered Markdown: code spans and link texts intact', async () => {
  const title = `Drop the table ${Date.now()}`;
  await mine(title, { body: 'Drop `users_legacy`? See [migration PR](https://example.com/pr/7) first.' });
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox`);
  const row = page.locator('li.item', { has: page.getByRole('link', { name: title }) });
  assert.equal(await row.locator('p.preview').innerText(), 'Drop users_legacy? See migration PR first.');
  await page.close();
});

test('the kill-switch asks before it closes a session', async () => {
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/agents/uibot`);
  await page.getByRole('button', { name: 'Close (kill-switch)' }).first().click();
  await page.getByRole('heading', { name: 'Close this session?' }).waitFor();
  await page.getByRole('link', { name: 'Cancel' }).click();
  await page.waitForURL(/\/inbox\/agents\/uibot/);
  const live = await page.getByRole('button', { name: 'Close (kill-switch)' }).count();
  assert.ok(live >= 1, 'cancel closed nothing');
  await page.getByRole('button', { name: 'Close (kill-switch)' }).first().click();
  await page.getByRole('button', { name: 'Close the session' }).click();
  await page.getByText(/closed; the agent is stopped/).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Close (kill-switch)' }).count(), live - 1);
  await page.close();
});

test('a sensitive ask is answered only after its content is revealed', async () => {
  const id = await mine('Rotate the root key?', { sensitive: true, body: 'The new key id is **K-7731**.' });
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/${id}`);
  assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
  assert.equal(await page.getByText('K-7731').count(), 0);
  await page.getByRole('link', { name: 'Reveal and answer' }).click();
  await page.getByText('K-7731').waitFor();
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Your answer was recorded.').waitFor();
  await page.close();
});

test('answer-and-next walks to the next ask I can answer', async () => {
  const stamp = Date.now();
  const first = await mine(`Next-1 ${stamp}`);
  await mine(`Next-2 ${stamp}`);
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/${first}`);
  await page.getByLabel('Then open the next message I can answer').check();
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Your answer was recorded. Next waiting for you:').waitFor();
  assert.notEqual(new URL(page.url()).pathname, `/inbox/${first}`);
  assert.equal(await page.getByLabel('Then open the next message I can answer').isChecked(), true, 'the walk goes on');
  await page.close();
});

test('bulk decline asks first, then declines the ticked rows', async () => {
  const stamp = Date.now();
  const ids = [await mine(`Bulk-A ${stamp}`), await mine(`Bulk-B ${stamp}`)];
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox`);
  for (const id of ids) await page.locator(`input.pick[value="${id}"]`).check();
  await page.getByRole('button', { name: 'Decline / dismiss selected' }).click();
  await page.getByRole('heading', { name: 'Decline 2 messages?' }).waitFor();
  await page.screenshot({ path: `${SHOTS}/bulk-confirm.png` });
  await page.getByRole('button', { name: 'Decline them' }).click();
  await page.getByText('Declined 2.').waitFor();
  for (const id of ids) {
    const r = await fetch(`${HUB}/v1/messages/${id}`, { headers: { authorization: `Bearer ${env('AGENT_KEY')}` } });
    assert.equal((await r.json()).status, 'declined');
  }
  await page.close();
});

test('claim, snooze and the timeline on a message page; search finds it again', async () => {
  const title = `Triage me ${Date.now()}`;
  const id = await mine(title, { body: 'Check the `queue_depth` graph first.' });
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/${id}`);
  await page.getByRole('button', { name: "I'm on it" }).click();
  await page.getByText("you're on it").first().waitFor();
  const timeline = await page.locator('section.timeline').innerText();
  assert.match(timeline, /viewed by human:tester/);
  assert.match(timeline, /claimed by human:tester/);
  await page.screenshot({ path: `${SHOTS}/message-triage-desktop.png`, fullPage: true });
  await page.getByLabel(/Snooze for me/).selectOption('1h');
  await page.getByRole('button', { name: 'Snooze', exact: true }).click();
  await page.getByText('Snoozed.').waitFor();
  assert.equal(await page.getByRole('link', { name: title }).count(), 0, 'gone from my list');
  await page.getByRole('link', { name: 'show them' }).click();
  await page.getByRole('link', { name: title }).waitFor();
  await page.getByRole('searchbox', { name: 'Search messages' }).fill('queue_depth');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('link', { name: title }).waitFor();
  await page.close();
});

test('keyboard: x ticks the current row for a bulk action', async () => {
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox`);
  await page.keyboard.press('j');
  const box = page.locator('ul.items > li.current input.pick');
  assert.equal(await box.count(), 1, 'the first row may be declined');
  await page.keyboard.press('x');
  assert.equal(await box.isChecked(), true);
  await page.getByRole('button', { name: 'Decline / dismiss selected' }).waitFor();
  await page.keyboard.press('x');
  assert.equal(await box.isChecked(), false);
  await page.close();
});

test('policies: save and remove an approval policy; a remembered answer answers the next keyed ask', async () => {
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/policies`);
  await page.getByLabel('Id', { exact: true }).fill('ui-prod');
  await page.getByLabel(/Approvals needed/).fill('2');
  await page.getByLabel('Only this tag').fill('ui-prod-tag');
  await page.getByRole('button', { name: 'Save policy' }).click();
  await page.getByText('Policy saved.').waitFor();
  const row = page.locator('table.cards tbody tr', { hasText: 'ui-prod' });
  assert.match(await row.innerText(), /#ui-prod-tag/);
  await page.screenshot({ path: `${SHOTS}/policies-desktop.png`, fullPage: true });
  await row.getByRole('button', { name: 'Remove' }).click();
  await page.getByText('Policy removed.').waitFor();

  const key = `Bash:ui-test ${Date.now()}`;
  const keyed = (title) => mine(title, { request: { mode: 'confirm', allowed_resolvers: ['human:tester'], grant_key: key } });
  const first = await keyed('Run the ui test?');
  await page.goto(`${HUB}/inbox/${first}`);
  await page.getByLabel(/Remember this answer/).selectOption('60m');
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText(/it stands: later asks of the same kind/).waitFor();
  const second = await keyed('Run the ui test again?');
  const r = await fetch(`${HUB}/v1/messages/${second}`, { headers: { authorization: `Bearer ${env('AGENT_KEY')}` } });
  const body = await r.json();
  assert.equal(body.status, 'answered');
  assert.match(body.response.response.grant_id, /^grt_/);
  await page.goto(`${HUB}/inbox/policies`);
  const grant = page.locator('table.cards tbody tr', { hasText: key });
  await grant.getByRole('button', { name: 'Revoke' }).click();
  await page.getByText('Grant revoked.').waitFor();
  await page.close();
});

test('channels: a route climbs an on-call ladder; the Policies page shows the team', async () => {
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/channels`);
  await page.locator('#rid').fill('ui-oncall');
  await page.getByLabel(/announce to/).fill('pager');
  await page.getByLabel(/On-call ladder/).fill('tester, nobody');
  await page.getByLabel(/minutes per rung/).fill('10');
  await page.getByRole('button', { name: 'Save route' }).click();
  const row = page.locator('table.cards tbody tr', { hasText: 'ui-oncall' });
  const text = await row.innerText();
  assert.match(text, /human:tester → human:nobody/);
  assert.match(text, /every 10 min; offline after 60 min/);
  await page.screenshot({ path: `${SHOTS}/channels-ladder-desktop.png`, fullPage: true });

  // the Team: this operator is online (these very pages), the ladder's other rung never seen
  await page.goto(`${HUB}/inbox/policies#team`);
  const team = page.locator('h2#team ~ table.cards').first();
  const tester = team.locator('tbody tr', { hasText: 'human:tester' });
  assert.match(await tester.innerText(), /online/);
  assert.match(await team.locator('tbody tr', { hasText: 'human:nobody' }).innerText(), /unknown[\s\S]*never seen/);
  await team.screenshot({ path: `${SHOTS}/policies-team-desktop.png` });

  await page.goto(`${HUB}/inbox/channels`);
  await page.locator('table.cards tbody tr', { hasText: 'ui-oncall' }).getByRole('button', { name: 'Remove' }).click();
  await page.waitForURL(/\/inbox\/channels$/);
  assert.equal(await page.locator('table.cards tbody tr', { hasText: 'ui-oncall' }).count(), 0);
  await page.close();
});

test('the audit page lists what happened, filters by kind and who, and looks right on a phone', async () => {
  const id = await mine(`Audit check ${Date.now()}`);
  for (const [ctx, size] of [[desktop, 'desktop'], [phone, 'phone']]) {
    const page = await ctx.newPage();
    await page.goto(`${HUB}/inbox/audit`);
    assert.ok(await page.getByText(id).first().isVisible(), `${size}: the submitted ask is listed`);
    await page.screenshot({ path: `${SHOTS}/audit-${size}.png`, fullPage: true });
    await page.close();
  }
  const page = await desktop.newPage();
  await page.goto(`${HUB}/inbox/audit`);
  await page.locator('select[name=kind]').selectOption('login');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/kind=login/);
  const kinds = await page.locator('table.audit tbody td[data-label=Event] code').allTextContents();
  assert.ok(kinds.length > 0 && kinds.every((k) => k === 'login'), kinds.join(','));
  await page.goto(`${HUB}/inbox/audit?actor=${encodeURIComponent('agent:uibot')}`);
  const who = await page.locator('table.audit tbody td[data-label=Who]').allTextContents();
  assert.ok(who.length > 0 && who.every((w) => w.trim() === 'agent:uibot'), who.join(','));
  await page.close();
});
