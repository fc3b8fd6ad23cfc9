/**
 * Headless Chromium for the status pages' browser tests: Debian's Chromium driven by playwright-core
 * (no browser is downloaded; CI installs it with scripts/install-browser.sh). One browser per test
 * file, launched by the first test that needs it.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll } from 'vitest';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Where the screenshot goes, for a person to look at (the path is printed). */
export const SCREENSHOT =
  process.env.HOOKBOT_STATUS_SCREENSHOT ?? join(tmpdir(), `hookbot-status-${process.pid}.png`);

async function launch(): Promise<Browser> {
  // Not a skip: a missing browser is a broken setup, and says how to fix it.
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: the status page browser test needs Debian's chromium. ` +
        'Install it with scripts/install-browser.sh (apt-get install chromium).',
    );
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
}

let launching: Promise<Browser> | undefined;
/**
 * One browser for the file, launched by the first test that needs it. Launching in a test rather
 * than in a hook makes a missing browser fail every test with its message (a failing hook would
 * only mark them skipped).
 */
export const browser = (): Promise<Browser> => (launching ??= launch());
afterAll(async () => {
  await (await launching?.catch(() => undefined))?.close();
});
