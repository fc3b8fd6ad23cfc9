import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { holdPort } from '../helpers/hold-port.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Running {
  child: ChildProcess;
  apiUrl: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `hookbot sandbox` as a real process and waits for the line with its API URL. */
async function startCli(args: string[], env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(process.execPath, ['bin/hookbot.js', 'sandbox', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const apiUrl = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const found = /http:\/\/127\.0\.0\.1:\d+\/api\/v3/.exec(out);
      // Wait for the whole banner, which ends with the stop hint.
      if (found && out.includes('Press Ctrl+C')) resolve(found[0]);
    };
    child.stdout!.on('data', check);
    void exited.then(({ code }) => reject(new Error(`sandbox exited (${code}) before serving:\n${out}`)));
  });
  return { child, apiUrl, output: () => out, exited };
}

async function stop(running: Running) {
  running.child.kill('SIGTERM');
  return running.exited;
}

// Each test starts real processes (tsx compiles at load): allow for a slow, busy machine.
describe('hookbot sandbox (command)', { timeout: 60_000 }, () => {
  const started: Running[] = [];
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-cli-sandbox-'));
  });
  afterEach(() => {
    for (const r of started.splice(0)) if (r.child.exitCode === null) r.child.kill('SIGKILL');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A file holding `token`, readable by its owner only. */
  const tokenFile = async (name: string, token: string) => {
    const file = path.join(dir, name);
    await writeFile(file, `${token}\n`, { mode: 0o600 });
    return file;
  };

  it('serves /api/v3 with the admin token of --admin-token-file and stops cleanly on SIGTERM (exit 0)', async () => {
    const running = await startCli(['--admin-token-file', await tokenFile('serve-token', 'cli-admin-token')]);
    started.push(running);
    expect(running.output()).toContain('root (administrator) token: cli-admin-token');
    const res = await fetch(`${running.apiUrl}/user`, { headers: { 'private-token': 'cli-admin-token' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 1, username: 'root', is_admin: true });
    expect(await stop(running)).toEqual({ code: 0, signal: null });
    expect(running.output()).toContain('stopped (SIGTERM)');
  });

  it('serves git over SSH with --ssh-port and prints the known_hosts line that trusts it', async () => {
    const running = await startCli(['--ssh-port', '0']);
    started.push(running);
    const line = /known_hosts line: (\[127\.0\.0\.1\]:(\d+) ssh-ed25519 \S+)/.exec(running.output());
    expect(line).not.toBeNull();
    const greeting = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(line![2]), '127.0.0.1');
      socket.once('data', (data: Buffer) => {
        socket.destroy();
        resolve(data.toString());
      });
      socket.once('error', reject);
    });
    expect(greeting).toMatch(/^SSH-2\.0-/);
    expect(await stop(running)).toEqual({ code: 0, signal: null });
  });

  it('generates and prints an admin token when none is given, and stops on SIGINT', async () => {
    const running = await startCli([]);
    started.push(running);
    const token = /root \(administrator\) token: (\S+)/.exec(running.output())?.[1];
    expect(token).toMatch(/^[0-9a-f]{20}$/);
    const res = await fetch(`${running.apiUrl}/user`, { headers: { 'private-token': token! } });
    expect(res.status).toBe(200);
    running.child.kill('SIGINT');
    expect(await running.exited).toEqual({ code: 0, signal: null });
  });

  it("prints the demo users' tokens with --seed demo", async () => {
    const running = await startCli(['--seed', 'demo']);
    started.push(running);
    const tokens = Object.fromEntries(
      [...running.output().matchAll(/^ {2}(\w+) token: (\S+)$/gm)].map((m) => [m[1], m[2]]),
    );
    expect(Object.keys(tokens).sort()).toEqual(['alice', 'bob', 'hookbot']);
    const res = await fetch(`${running.apiUrl}/projects/acme%2Fweb`, {
      headers: { 'private-token': tokens.hookbot! },
    });
    expect(res.status).toBe(200);
    expect(await stop(running)).toEqual({ code: 0, signal: null });
  });

  it('keeps its state in --data FILE across a restart', async () => {
    const file = path.join(dir, 'state.json');
    const args = ['--admin-token-file', await tokenFile('persist-token', 'persist-token'), '--data', file];
    const first = await startCli(args);
    started.push(first);
    const created = await fetch(`${first.apiUrl}/projects`, {
      method: 'POST',
      headers: { 'private-token': 'persist-token', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'survivor' }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };
    expect(await stop(first)).toEqual({ code: 0, signal: null });

    const second = await startCli(args);
    started.push(second);
    const res = await fetch(`${second.apiUrl}/projects/${id}`, {
      headers: { 'private-token': 'persist-token' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id, name: 'survivor', path_with_namespace: 'root/survivor' });
    expect(await stop(second)).toEqual({ code: 0, signal: null });
  });

  it('names the taken port and the option that moves it, without a JavaScript error (exit 1)', async () => {
    const taken = await holdPort();
    try {
      const child = spawn(
        process.execPath,
        ['bin/hookbot.js', 'sandbox', '--port', String(taken.port), '--host', '127.0.0.1'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let err = '';
      child.stderr.on('data', (chunk) => (err += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code).toBe(1);
      expect(err).toContain(
        `cannot listen on 127.0.0.1:${taken.port}: another program is using port ${taken.port}`,
      );
      expect(err).toContain('choose another port with --port');
      expect(err).not.toMatch(/Cannot read properties|TypeError|\n\s+at /);
    } finally {
      await taken.release();
    }
  });

  it('runs the simulated CI with --ci: a commit gets the named status from the script, posted by sandbox-ci', async () => {
    const running = await startCli([
      '--admin-token-file',
      await tokenFile('ci-token', 'ci-cli-token'),
      '--ci',
      'test -f ok.txt',
      '--ci-duration',
      '0',
      '--ci-name',
      'ci/cli',
      '--ci-parallel',
      '2',
    ]);
    started.push(running);
    expect(running.output()).toContain('simulated CI: every pushed commit gets status ci/cli');
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${running.apiUrl}${url}`, {
        method,
        headers: { 'private-token': 'ci-cli-token', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const project = await call('POST', '/projects', { name: 'built' });
    expect(project.status).toBe(201);
    const files = `/projects/${project.body.id}/repository/files`;
    const commit = { branch_name: 'master', commit_message: 'add' };
    expect((await call('POST', files, { ...commit, file_path: 'ok.txt', content: 'ok\n' })).status).toBe(201);
    const first = (await call('GET', `/projects/${project.body.id}/repository/branches/master`)).body.commit
      .id;
    expect((await call('POST', files, { ...commit, file_path: 'b.txt', content: 'b\n' })).status).toBe(201);
    const withOk = (await call('GET', `/projects/${project.body.id}/repository/branches/master`)).body.commit
      .id;
    const statusOf = async (sha: string) =>
      (await call('GET', `/projects/${project.body.id}/repository/commits/${sha}/statuses`)).body as any[];
    await waitFor(
      async () => ((await statusOf(withOk))[0]?.status === 'success' ? true : undefined),
      30_000,
      'the CI to pass the second commit',
    );
    expect((await statusOf(first))[0]).toMatchObject({ name: 'ci/cli', author: { username: 'sandbox-ci' } });
    expect(await stop(running)).toEqual({ code: 0, signal: null });
  });

  it.each([
    [
      '--ci-duration without --ci',
      ['--ci-duration', '10'],
      /--ci-duration set the simulated CI: give --ci <script> too/,
    ],
    [
      'a --ci-parallel of 0',
      ['--ci', 'true', '--ci-parallel', '0'],
      /error: option '--ci-parallel <n>' argument '0' is invalid/,
    ],
    ['an empty --ci', ['--ci', ' '], /--ci needs a script/],
    [
      'the administrator token on the command line (every user of the machine reads it there)',
      ['--admin-token', 'seen-by-all'],
      /--admin-token is no longer taken: every user of this machine can read a program's command line.*--admin-token-file FILE/,
    ],
    [
      'an --admin-token-file that does not exist',
      ['--admin-token-file', '/nonexistent/admin-token'],
      /--admin-token-file \/nonexistent\/admin-token: ENOENT/,
    ],
    [
      'a token file of more than one word',
      ['--admin-token-file', 'package.json'],
      /--admin-token-file package.json must hold one token on one line/,
    ],
  ] as [string, string[], RegExp, Record<string, string>?][])(
    'exits 2 for %s, saying what to change',
    async (_name, args, message, env = {}) => {
      const child = spawn(process.execPath, ['bin/hookbot.js', 'sandbox', '--port', '0', ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      });
      let err = '';
      child.stderr.on('data', (chunk) => (err += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code).toBe(2);
      expect(err).toMatch(message);
    },
  );

  it.each([
    ['a port that is not a number', ['--port', 'http']],
    ['an unknown seed', ['--seed', 'huge']],
  ])('exits 2 for %s', async (_name, args) => {
    const child = spawn(process.execPath, ['bin/hookbot.js', 'sandbox', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk) => (err += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(err).toMatch(/error: option/);
  });
});
