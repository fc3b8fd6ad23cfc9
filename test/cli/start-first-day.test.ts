/**
 * `hookbot start` as a new user meets it on the first day, as processes and with real signals: in a
 * fresh folder with every path left at its default (`data/`, `rules/`), it makes `data/` 0700 and
 * says nothing about its mode; its banner prints the pid to signal (HUP reloads the rules, TERM
 * stops), and the lines that run `sweep` and `plan` against its sandbox, which work pasted as
 * printed; `sweep` and `plan` without a server say what to paste. Under `npm start`, the pid printed
 * is the bot's, not npm's.
 *
 * Settings, each because the test needs it: `HOOKBOT_PORT=0` and `HOOKBOT_SANDBOX_PORT=0` (other
 * tests run at once on this machine and the default ports may be taken; the banner says which were
 * picked); `HOOKBOT_LOG_LEVEL=info` (the reload's `rules loaded` line is an info line);
 * `HOOKBOT_IN_DOCKER=0` (the test machine may be a container: nothing here is about that).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(REPO, 'bin/hookbot.js');
/** A busy 2-core machine runs npm, tsx, the sandbox and the bot at once: each wait, and each test. */
const WAIT = 60_000;
const LONG = 180_000;

interface Running {
  child: ChildProcess;
  output: () => string;
  /** The process's exit code, once its output is closed. */
  ended: Promise<number | null>;
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; detached?: boolean },
): Running {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const ended = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => out, ended };
}

/** The environment of a user's shell: nothing of hookbot's, npm's or the test runner's, but `extra`. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('HOOKBOT_') && !name.startsWith('npm_') && !name.startsWith('VITEST'))
      env[name] = value;
  return { ...env, HOOKBOT_IN_DOCKER: '0', ...extra };
}

/** Whatever is left of a process group started with `detached` (npm, its shell, the bot). */
function endGroup(running: Running): void {
  try {
    process.kill(-running.child.pid!, 'SIGKILL');
  } catch {
    // The group has ended.
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const bannerPid = (out: string) => /^ {2}pid: +(\d+) /m.exec(out)?.[1];
const sandboxPort = (out: string) => /sandbox: +http:\/\/127\.0\.0\.1:(\d+)\/api\/v3/.exec(out)?.[1];
const rulesLoaded = (out: string) => out.split('"msg":"rules loaded"').length - 1;
/** Rejects after `ms` instead of leaving the test to time out without a word. */
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const shell = (script: string, cwd: string, env: NodeJS.ProcessEnv) =>
  new Promise<{ code: number; out: string }>((resolve) =>
    execFile('bash', ['-c', script], { cwd, env }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    ),
  );

describe('hookbot start in a fresh folder, every path at its default', () => {
  let dir = '';
  let started: Running;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-first-day-'));
    // As in a clone: the example rules in rules/, and no data/ yet.
    cpSync(path.join(REPO, 'rules'), path.join(dir, 'rules'), { recursive: true });
    env = userEnv({ HOOKBOT_PORT: '0', HOOKBOT_SANDBOX_PORT: '0', HOOKBOT_LOG_LEVEL: 'info' });
    started = run(process.execPath, [BIN, 'start'], { cwd: dir, env });
    await waitFor(
      () => {
        if (/could not start/.test(started.output())) throw new Error(started.output());
        return started.output().includes('Press Ctrl+C to stop.') ? true : undefined;
      },
      WAIT,
      'the banner',
    );
  }, LONG);

  afterAll(async () => {
    if (started.child.exitCode === null) {
      started.child.kill('SIGTERM');
      await started.ended;
    }
  });

  it('creates data/ 0700 (the sandbox and the state share it) and warns of nothing about it', () => {
    expect(statSync(path.join(dir, 'data')).mode & 0o777).toBe(0o700);
    expect(readdirSync(path.join(dir, 'data'))).toEqual(expect.arrayContaining(['sandbox.json']));
    expect(started.output()).not.toContain('can be listed by other users');
    expect(started.output()).not.toContain('"level":40');
  });

  it(
    'prints the sweep and plan lines, which run against its sandbox pasted as printed',
    async () => {
      const out = started.output();
      const port = sandboxPort(out)!;
      const sweepLine = out.split('\n').find((line) => line.includes('hookbot sweep --once --dry-run'));
      const planLine = out.split('\n').find((line) => line.endsWith('npx hookbot plan'));
      expect(sweepLine?.trim()).toBe(
        `HOOKBOT_API_URL=http://127.0.0.1:${port} HOOKBOT_API_TOKEN=hookbot-demo-token HOOKBOT_STATE=data/sweep.json npx hookbot sweep --once --dry-run`,
      );
      expect(planLine?.trim()).toBe(
        `HOOKBOT_API_URL=http://127.0.0.1:${port} HOOKBOT_API_TOKEN=hookbot-demo-token npx hookbot plan`,
      );
      // `npx hookbot` outside the clone would ask the registry: the same command through the bin.
      const asPrinted = (line: string) => line.trim().replace('npx hookbot', `node ${BIN}`);
      const sweep = await shell(asPrinted(sweepLine!), dir, userEnv({}));
      expect(sweep.out).toContain('rules (dry run: nothing changed)');
      expect(sweep.out).toMatch(/acme\/web: \d+ open issues?/);
      expect(sweep.code).toBe(0);
      const plan = await shell(asPrinted(planLine!), dir, userEnv({}));
      expect(plan.out).toContain('acme/web:');
      expect(plan.code).toBe(0);
      // The running bot kept its state file: the sweep had a state of its own.
      expect(started.child.exitCode).toBeNull();
    },
    LONG,
  );

  it(
    'sweep and plan without a server print what to paste when its sandbox answers, else point to the banner',
    async () => {
      const port = sandboxPort(started.output())!;
      const found = await shell(`node ${BIN} sweep --once`, dir, userEnv({ HOOKBOT_SANDBOX_PORT: port }));
      expect(found.code).toBe(1);
      expect(found.out).toContain(
        `The embedded sandbox of \`npm start\` answers at http://127.0.0.1:${port}: to sweep it`,
      );
      expect(found.out).toContain(
        `  HOOKBOT_API_URL=http://127.0.0.1:${port} HOOKBOT_API_TOKEN=hookbot-demo-token HOOKBOT_STATE=data/sweep.json npx hookbot sweep --once --dry-run`,
      );
      const planFound = await shell(`node ${BIN} plan`, dir, userEnv({ HOOKBOT_SANDBOX_PORT: port }));
      expect(planFound.code).toBe(1);
      expect(planFound.out).toContain(
        `  HOOKBOT_API_URL=http://127.0.0.1:${port} HOOKBOT_API_TOKEN=hookbot-demo-token npx hookbot plan`,
      );
      // A port where no sandbox answers: where to find the line.
      const none = await shell(`node ${BIN} plan`, dir, userEnv({ HOOKBOT_SANDBOX_PORT: '1' }));
      expect(none.code).toBe(1);
      expect(none.out).toContain('no server configured: set api.url and api.token');
      expect(none.out).toContain('paste the `hookbot plan` line its banner prints');
    },
    LONG,
  );

  it(
    'prints its pid: HUP to it reloads the rules and the bot runs on; TERM stops it',
    async () => {
      const pid = Number(bannerPid(started.output()));
      // No launcher between: the pid printed is the process bin/hookbot.js runs in.
      expect(pid).toBe(started.child.pid);
      const before = rulesLoaded(started.output());
      expect(before).toBeGreaterThanOrEqual(1);
      process.kill(pid, 'SIGHUP');
      await waitFor(() => (rulesLoaded(started.output()) > before ? true : undefined), WAIT, 'the reload');
      expect(started.child.exitCode).toBeNull();
      process.kill(pid, 'SIGTERM');
      expect(await started.ended).toBe(0);
      expect(started.output()).toContain('hookbot: stopped');
    },
    LONG,
  );
});

describe('npm start', () => {
  it(
    "prints the bot's pid, not npm's: HUP to it reloads the rules, TERM to it ends npm too",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-npm-start-'));
      // In a process group of its own, so that whatever is left at the end can be stopped with it.
      const npm = run('npm', ['start'], {
        detached: true,
        cwd: REPO,
        env: userEnv({
          HOOKBOT_PORT: '0',
          HOOKBOT_SANDBOX_PORT: '0',
          HOOKBOT_LOG_LEVEL: 'info',
          // The clone's own data/ is left alone: the test's state and sandbox live in its folder.
          HOOKBOT_STATE: path.join(dir, 'hookbot.json'),
          HOOKBOT_SANDBOX_DATA: path.join(dir, 'sandbox.json'),
        }),
      });
      try {
        const pid = Number(await waitFor(() => bannerPid(npm.output()), WAIT, 'the banner'));
        expect(pid).not.toBe(npm.child.pid);
        const before = rulesLoaded(npm.output());
        process.kill(pid, 'SIGHUP');
        await waitFor(() => (rulesLoaded(npm.output()) > before ? true : undefined), WAIT, 'the reload');
        expect(npm.child.exitCode).toBeNull();
        process.kill(pid, 'SIGTERM');
        expect(await withTimeout(npm.ended, WAIT, 'npm to end')).toBe(0);
        expect(npm.output()).toContain('hookbot: stopped');
      } catch (error) {
        // What npm and the bot said, to tell a slow machine from a stuck process.
        throw new Error(`${(error as Error).message}\n--- npm start said:\n${npm.output()}`);
      } finally {
        endGroup(npm);
      }
    },
    LONG,
  );

  it(
    "a signal sent to npm's pid ends npm: the bot then stops too, saying which pid to signal, instead of running on orphaned",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-npm-hup-'));
      // In a process group of its own, so that whatever is left at the end can be stopped with it.
      const npm = run('npm', ['start'], {
        cwd: REPO,
        detached: true,
        env: userEnv({
          HOOKBOT_PORT: '0',
          HOOKBOT_SANDBOX_PORT: '0',
          HOOKBOT_STATE: path.join(dir, 'hookbot.json'),
          HOOKBOT_SANDBOX_DATA: path.join(dir, 'sandbox.json'),
        }),
      });
      let pid = 0;
      try {
        pid = Number(await waitFor(() => bannerPid(npm.output()), WAIT, 'the banner'));
        process.kill(npm.child.pid!, 'SIGHUP');
        expect(await withTimeout(npm.ended, WAIT, 'npm and the bot to end')).not.toBeUndefined();
        expect(alive(pid)).toBe(false);
        expect(npm.output()).toContain(
          `which started this bot, has ended: stopping. Signals go to the bot's own pid, ${pid}: kill -HUP ${pid} reloads the rules`,
        );
        expect(npm.output()).toContain('hookbot: stopped');
      } catch (error) {
        throw new Error(`${(error as Error).message}\n--- npm start said:\n${npm.output()}`);
      } finally {
        if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
        endGroup(npm);
      }
    },
    LONG,
  );
});
