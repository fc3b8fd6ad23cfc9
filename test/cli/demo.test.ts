/** `hookbot demo` plays its whole scenario against the sandbox and exits 0 only if every step happened. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('hookbot demo', () => {
  it('plays every step, explains each, and exits 0; no secret appears in a debug-level run', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['bin/hookbot.js', 'demo'], {
      env: { ...process.env, HOOKBOT_DEMO_LOG: '1', HOOKBOT_IN_DOCKER: '0' },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(stdout).toContain('All 6 steps happened as expected.');
    for (const step of [
      'labelled and triaged',
      'moved to the help desk',
      'policy status',
      'merged once its required statuses succeed',
      'cancels merge-when-build-succeeds',
      'closed by a sweep',
    ]) {
      expect(stdout).toContain(step);
    }
    expect(stdout.match(/why: on /g)?.length).toBeGreaterThanOrEqual(6);
    // The bot's debug logs of the whole run: the tokens and the hook secret never appear.
    expect(stderr.length).toBeGreaterThan(1000);
    for (const secret of ['hookbot-demo-token', 'alice-demo-token', 'demo-hook-secret']) {
      expect(stderr).not.toContain(secret);
    }
  }, 120_000);

  it('reads HOOKBOT_DEMO_LOG as every boolean variable is read, and refuses anything else by name', async () => {
    const run = promisify(execFile)(process.execPath, ['bin/hookbot.js', 'demo'], {
      env: { ...process.env, HOOKBOT_DEMO_LOG: 'maybe', HOOKBOT_IN_DOCKER: '0' },
    });
    await expect(run).rejects.toMatchObject({
      code: 1,
      stderr:
        'hookbot demo: HOOKBOT_DEMO_LOG is "maybe": use true or false (also 1 or 0, yes or no, on or off, in any case)\n',
    });
  }, 60_000);
});
