/**
 * `npm start` on a clean checkout (no configuration): the embedded sandbox with the demo, the bot
 * registered as the demo projects' hook, the example rules; a delivery from the sandbox reaches the bot
 * and the bot acts; Ctrl-C (SIGINT) stops both with exit 0. Tested as a process, over HTTP.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';

describe('hookbot start on the embedded default', () => {
  it('runs the bot on the seeded sandbox, acts on a demo issue, and stops cleanly on Ctrl-C', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-'));
    const child = spawn(process.execPath, ['bin/hookbot.js', 'start'], {
      env: {
        ...process.env,
        HOOKBOT_IN_DOCKER: '0',
        HOOKBOT_PORT: '0',
        HOOKBOT_STATE: path.join(dir, 'hookbot.json'),
        HOOKBOT_SANDBOX_PORT: '0',
        HOOKBOT_SANDBOX_DATA: path.join(dir, 'sandbox.json'),
        HOOKBOT_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const sandboxApi = await waitFor(
        () => /sandbox:\s+(http:\/\/127\.0\.0\.1:\d+\/api\/v3)/.exec(out)?.[1],
      );
      expect(out).toContain('running on the embedded sandbox');
      expect(out).toMatch(/status page: http:\/\/127\.0\.0\.1:\d+\/status/);
      expect(out).toMatch(/hook registered on: .*acme\/web/);

      const project = encodeURIComponent('acme/web');
      const created = await fetch(`${sandboxApi}/projects/${project}/issues`, {
        method: 'POST',
        headers: { 'private-token': 'alice-demo-token', 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'The app crashes on start' }),
      });
      const issue = (await created.json()) as { id: number };
      const labels = await waitFor(async () => {
        const res = await fetch(`${sandboxApi}/projects/${project}/issues/${issue.id}`, {
          headers: { 'private-token': 'alice-demo-token' },
        });
        const body = (await res.json()) as { labels: string[] };
        return body.labels.includes('bug') ? body.labels : undefined;
      });
      expect(labels).toEqual(expect.arrayContaining(['bug', 'needs-triage']));
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  }, 90_000);
});
