/** `hookbot demo` plays its whole scenario against the sandbox and exits 0 only if every step happened. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

  it('with rules of your own, a failing step says what your rule did instead, at once when the bot already decided it would not act', async () => {
    // The example rules with three changes a user might make: the triage rule's title pattern no
    // longer matches the demo's bug report, the support rule is renamed and moves issues labelled
    // `help` (no rule named as the step expects, none acts), and the stale rule lost its age
    // condition, so that it would close every open issue and the circuit breaker pauses it.
    const example = readFileSync('rules/default.yml', 'utf8');
    const mine = example
      .replace(
        "title: { matches: '(?i)\\b(bug|crash\\w*|broken)\\b' }",
        "title: { matches: '(?i)\\bdefect\\b' }",
      )
      .replace('name: move support questions', 'name: move help requests')
      .replace('labels: { any: [question] }', 'labels: { any: [help] }')
      .replace('      - updated: { older_than: 60d }\n', '');
    expect(mine).not.toBe(example);
    expect(mine).toContain('defect');
    expect(mine).not.toContain('older_than: 60d');
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-demo-rules-'));
    writeFileSync(path.join(dir, 'default.yml'), mine);

    const run = await promisify(execFile)(process.execPath, ['bin/hookbot.js', 'demo', '--rules', dir], {
      env: { ...process.env, HOOKBOT_IN_DOCKER: '0' },
      maxBuffer: 64 * 1024 * 1024,
    }).catch((error: unknown) => error as { code: number; stdout: string });
    expect(run).toMatchObject({ code: 1 });
    const stdout = (run as { stdout: string }).stdout;
    expect(stdout).toContain('3 of 6 steps did not happen as expected.');
    // The rule that did not match: what it saw, said as soon as the bot decided (before the fix, each
    // such step waited out its 15 s and said "after 15 s").
    expect(stdout).toContain(
      'FAILED: no bug labels: on issue.open, your rule "triage bug reports" did not match: title matches',
    );
    // No rule of the expected name, and none acted: said once the bot decided, too.
    expect(stdout).toContain(
      'FAILED: no move: no rule named "move support questions" is in force for acme/web',
    );
    for (const line of stdout.split('\n').filter((l) => l.includes('FAILED')))
      expect(line).not.toContain('after 15 s');
    expect(stdout).toContain('(seen "Checkout crashes when the cart is empty")');
    // The rule the breaker paused: said at once, with the breaker's reason, not after the timeout.
    const stale = stdout.split('\n').find((line) => line.includes('FAILED: no close of the stale issue'));
    expect(stale).toMatch(
      /your rule "close stale issues" was paused by the circuit breaker: acme\/\w+: would touch \d+ of \d+ items/,
    );
    expect(stale).toContain('hookbot sweep --once --approve "close stale issues"');
    expect(stale).not.toContain('after 15 s');
    expect(stdout).not.toContain('timed out');
  }, 180_000);
});
