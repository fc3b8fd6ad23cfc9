/**
 * `npm start` on a clean checkout (no configuration): the embedded sandbox with the demo, the bot
 * registered as the demo projects' hook, the example rules; a delivery from the sandbox reaches the bot
 * and the bot acts; Ctrl-C (SIGINT) stops both with exit 0. Tested as a process, over HTTP.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { holdPort } from '../helpers/hold-port.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Started {
  output: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<number | null>;
}

/** `hookbot start` as a process, with its state and the sandbox's data in `dir`. */
function startProcess(dir: string, env: Record<string, string> = {}): Started {
  const child = spawn(process.execPath, ['bin/hookbot.js', 'start'], {
    env: {
      ...process.env,
      HOOKBOT_IN_DOCKER: '0',
      HOOKBOT_PORT: '0',
      HOOKBOT_STATE: path.join(dir, 'hookbot.json'),
      HOOKBOT_SANDBOX_PORT: '0',
      HOOKBOT_SANDBOX_DATA: path.join(dir, 'sandbox.json'),
      HOOKBOT_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    output: () => out,
    exited,
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

const sandboxApiOf = (out: string) => /sandbox:\s+(http:\/\/127\.0\.0\.1:\d+\/api\/v3)/.exec(out)?.[1];
const adminTokenOf = (out: string) => /admin token: (\S+)/.exec(out)?.[1];

/** While waiting for the banner: a start that failed says why at once instead of timing out. */
function exitedEarly(started: Started): undefined {
  if (/could not start/.test(started.output())) throw new Error(started.output());
  return undefined;
}

describe('hookbot start on the embedded default', () => {
  it('runs the bot on the seeded sandbox, acts on a demo issue, and stops cleanly on Ctrl-C', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-'));
    const started = startProcess(dir);
    try {
      const sandboxApi = await waitFor(() => sandboxApiOf(started.output()));
      const out = started.output();
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

      // The banner's next step, run as printed: it opens an issue, then reads its labels back.
      expect(out).toContain('Next: open an issue as alice');
      const [open, read] = out
        .split('\n')
        .filter((line) => line.startsWith('  id=$(curl') || line.startsWith('  curl -s -H'));
      expect(open).toBeDefined();
      expect(read).toBeDefined();
      const shell = (script: string) =>
        new Promise<string>((resolve, reject) =>
          execFile('bash', ['-c', script], (error, stdout) => (error ? reject(error) : resolve(stdout))),
        );
      const id = (await shell(`${open!.trim()}\necho "$id"`)).trim();
      expect(id).toMatch(/^\d+$/);
      const printed = await waitFor(async () => {
        const text = await shell(`id=${id}\n${read!.trim()}`);
        return text.includes("'needs-triage'") ? text : undefined;
      });
      expect(printed).toContain("'bug'");
    } finally {
      await started.stop();
    }
    expect(await started.exited).toBe(0);
  }, 90_000);

  it("promises the labels the rules in force add, not the example rules' (issue 37)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-rules-'));
    const rules = path.join(dir, 'rules');
    mkdirSync(rules);
    writeFileSync(
      path.join(rules, 'default.yml'),
      "rules:\n  - name: ask\n    on: [issue.open]\n    if: [ { title: { matches: '(?i)crash' } } ]\n    do: [ { label: { add: [question] } } ]\n",
    );
    const started = startProcess(dir, { HOOKBOT_RULES: rules });
    try {
      await waitFor(
        () => exitedEarly(started) ?? (/Press Ctrl\+C/.test(started.output()) ? true : undefined),
      );
      const out = started.output();
      expect(out).toContain(
        'Next: open an issue as alice, then read its labels back (the rules in force add question):',
      );
      expect(out).not.toContain('needs-triage');
    } finally {
      await started.stop();
    }
    expect(await started.exited).toBe(0);
  }, 60_000);

  it('keeps one hook per demo project across starts on 0.0.0.0, and removes copies left by earlier starts', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-hooks-'));
    const project = encodeURIComponent('acme/web');
    const hooksOf = async (api: string, token: string) => {
      const res = await fetch(`${api}/projects/${project}/hooks`, { headers: { 'private-token': token } });
      return (await res.json()) as { id: number; url: string }[];
    };
    // The first start, as in a container: the bot listens on every address.
    const first = startProcess(dir, { HOOKBOT_HOST: '0.0.0.0', HOOKBOT_ALLOW_PUBLIC_OPS: 'true' });
    try {
      const api = await waitFor(() => sandboxApiOf(first.output()));
      const token = adminTokenOf(first.output())!;
      // What earlier versions left behind: a copy to the any-address at another port. And a hook to
      // somewhere else, which is not the bot's and must stay.
      for (const url of ['http://0.0.0.0:3999/hooks', 'https://ci.example.com/hooks'])
        await fetch(`${api}/projects/${project}/hooks`, {
          method: 'POST',
          headers: { 'private-token': token, 'content-type': 'application/json' },
          body: JSON.stringify({ url, push_events: true }),
        });
    } finally {
      expect(await first.stop()).toBe(0);
    }

    for (let run = 0; run < 2; run++) {
      const again = startProcess(dir, { HOOKBOT_HOST: '0.0.0.0', HOOKBOT_ALLOW_PUBLIC_OPS: 'true' });
      try {
        const api = await waitFor(() => sandboxApiOf(again.output()));
        const botPort = /bot:\s+http:\/\/0\.0\.0\.0:(\d+)/.exec(again.output())?.[1];
        const hooks = await hooksOf(api, adminTokenOf(again.output())!);
        expect(hooks.map((h) => h.url).sort()).toEqual([
          `http://127.0.0.1:${botPort}/hooks`,
          'https://ci.example.com/hooks',
        ]);

        // The one hook delivers: the rules act on a new issue.
        const created = await fetch(`${api}/projects/${project}/issues`, {
          method: 'POST',
          headers: { 'private-token': 'alice-demo-token', 'content-type': 'application/json' },
          body: JSON.stringify({ title: `The app crashes on start (run ${run})` }),
        });
        const issue = (await created.json()) as { id: number };
        await waitFor(async () => {
          const res = await fetch(`${api}/projects/${project}/issues/${issue.id}`, {
            headers: { 'private-token': 'alice-demo-token' },
          });
          const body = (await res.json()) as { labels: string[] };
          return body.labels.includes('bug') ? true : undefined;
        });
      } finally {
        expect(await again.stop()).toBe(0);
      }
    }
  }, 120_000);

  it('in a container (a /.dockerenv-like file) with nothing configured: comes up on loopback and acts', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-container-'));
    const marker = path.join(dir, 'dockerenv');
    writeFileSync(marker, '');
    // The container signal as a file, as /.dockerenv is: HOOKBOT_IN_DOCKER unset (empty).
    const started = startProcess(dir, { HOOKBOT_IN_DOCKER: '', HOOKBOT_CONTAINER_FILE: marker });
    try {
      const sandboxApi = await waitFor(() => sandboxApiOf(started.output()) ?? exitedEarly(started));
      expect(started.output()).toMatch(/bot:\s+http:\/\/127\.0\.0\.1:\d+ /);
      const project = encodeURIComponent('acme/web');
      const created = await fetch(`${sandboxApi}/projects/${project}/issues`, {
        method: 'POST',
        headers: { 'private-token': 'alice-demo-token', 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'It crashes on start' }),
      });
      const issue = (await created.json()) as { id: number };
      await waitFor(async () => {
        const res = await fetch(`${sandboxApi}/projects/${project}/issues/${issue.id}`, {
          headers: { 'private-token': 'alice-demo-token' },
        });
        return ((await res.json()) as { labels: string[] }).labels.includes('bug') ? true : undefined;
      });
    } finally {
      await started.stop();
    }
    expect(await started.exited).toBe(0);
  }, 90_000);

  it('asked for every interface with nothing to guard the status page: refused, naming the variable', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-public-'));
    const started = startProcess(dir, { HOOKBOT_HOST: '0.0.0.0' });
    expect(await started.exited).toBe(1);
    const out = started.output();
    expect(out).toContain('hookbot start: could not start: server.host is 0.0.0.0, beyond loopback');
    expect(out).toContain('It is 0.0.0.0 because HOOKBOT_HOST sets it.');
    expect(out).toContain('HOOKBOT_ALLOW_PUBLIC_OPS=true');
  }, 60_000);

  it.each([
    ['the embedded sandbox', 'HOOKBOT_SANDBOX_PORT'],
    ['the bot', 'HOOKBOT_PORT'],
  ])(
    'names the taken port of %s and %s, exit 1, no JavaScript error',
    async (what, variable) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-start-port-'));
      const taken = await holdPort();
      try {
        const started = startProcess(dir, { [variable]: String(taken.port) });
        expect(await started.exited).toBe(1);
        const out = started.output();
        expect(out).toContain(
          `${what} cannot listen on 127.0.0.1:${taken.port}: another program is using port`,
        );
        expect(out).toContain(`choose another port with ${variable}`);
        expect(out).not.toMatch(/Cannot read properties|TypeError|\n\s+at /);
      } finally {
        await taken.release();
      }
    },
    60_000,
  );
});
