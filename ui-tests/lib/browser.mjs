// What every browser test file shares: the environment scripts/ui-test.sh exports, the
// screenshot folder, and headless Debian Chromium launched the same way.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const env = (k) => {
  const v = process.env[k];
  assert.ok(v, `${k} must be set (run scripts/ui-test.sh)`);
  return v;
};
export const HUB = env('HUB_URL');
export const SHOTS = process.env.SCREENSHOT_DIR || 'artifacts';
mkdirSync(SHOTS, { recursive: true });

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
