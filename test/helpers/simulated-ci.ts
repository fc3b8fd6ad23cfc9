/**
 * A simulated CI for the merge queue's tests and benchmark: for every new head pushed to a project
 * of the sandbox (a file commit, a git push, a merge), it posts `pending` for its status name, then,
 * after a short build, `success` or `failed` through the API, like an external CI.
 *
 * The build is a check of the tree at that commit with a semantic conflict in mind: every line
 * `calls: NAME` in any file needs a line `def NAME` in some file. Two merge requests that each pass
 * alone can fail together (one renames `def foo` to `def bar`, the other adds `calls: foo`), which
 * no textual merge sees.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PushEvent } from '../../src/sandbox/context.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';

export type CiMode =
  /** pending, then success or failed. */
  | 'normal'
  /** pending, and never anything more: a status that never reports. */
  | 'pending-forever';

export interface SimulatedCiOptions {
  /** The status name posted (`ci/test`). */
  name?: string;
  /** The token of the user the CI posts as. */
  token: string;
  /** That user's git credentials (the CI fetches what it builds). */
  git: { username: string; password: string };
  /** How long a build takes, in ms. Default 20. */
  buildMs?: number;
  /** Per branch: how its builds behave (default `normal`). */
  modeOf?: (branch: string) => CiMode;
}

export interface SimulatedCi {
  /** Builds started (one per new head). */
  readonly runs: number;
  /** Builds that failed. */
  readonly failures: number;
  /** Builds not finished yet. */
  readonly running: number;
  /** Whether the tree at `sha` of `projectId` passes the check. */
  passes(projectId: number, sha: string): Promise<boolean>;
  /** Resolves when no build is running (those that never finish are not waited for). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

function run(cwd: string, args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['-C', cwd, ...args],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: cwd,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          LC_ALL: 'C',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout) => resolve({ code: error ? 1 : 0, stdout }),
    );
  });
}

const ZERO = '0000000000000000000000000000000000000000';

export function startSimulatedCi(sb: Sandbox, options: SimulatedCiOptions): SimulatedCi {
  const name = options.name ?? 'ci/test';
  const buildMs = options.buildMs ?? 20;
  let runs = 0;
  let failures = 0;
  let stopped = false;
  const building = new Set<Promise<void>>();
  const seen = new Set<string>();

  async function post(projectId: number, sha: string, branch: string, state: string): Promise<void> {
    const url = new URL(`${sb.apiUrl}/projects/${projectId}/statuses/${sha}`);
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'private-token': options.token, 'content-type': 'application/json' },
      body: JSON.stringify({ state, name, ref: branch }),
    });
    if (!response.ok && !stopped) throw new Error(`CI could not post ${state}: ${response.status}`);
  }

  /** Its own bare clone per project, fetched over git HTTP as a real CI would. */
  const clones = new Map<number, Promise<{ dir: string; url: string }>>();
  function cloneOf(projectId: number) {
    let clone = clones.get(projectId);
    if (!clone) {
      clone = (async () => {
        const response = await fetch(`${sb.apiUrl}/projects/${projectId}`, {
          headers: { 'private-token': options.token },
        });
        const project = (await response.json()) as { http_url_to_repo: string };
        const url = new URL(project.http_url_to_repo);
        url.username = options.git.username;
        url.password = options.git.password;
        const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-ci-'));
        dirs.push(dir);
        await run(dir, ['init', '--quiet', '--bare', dir]);
        return { dir, url: url.toString() };
      })();
      clones.set(projectId, clone);
    }
    return clone;
  }
  const dirs: string[] = [];

  async function passes(projectId: number, sha: string): Promise<boolean> {
    const { dir, url } = await cloneOf(projectId);
    if ((await run(dir, ['cat-file', '-e', `${sha}^{commit}`])).code !== 0)
      await run(dir, ['fetch', '--quiet', url, '+refs/heads/*:refs/remotes/origin/*']);
    // A head already pushed over (unreachable, so not fetched) is not built: it does not pass.
    if ((await run(dir, ['cat-file', '-e', `${sha}^{commit}`])).code !== 0) return false;
    const grep = await run(dir, ['grep', '-h', '-E', '^(def|calls:) ', sha]);
    const defs = new Set<string>();
    const calls = new Set<string>();
    for (const line of grep.stdout.split('\n')) {
      const def = /^def (\w+)/.exec(line);
      if (def?.[1]) defs.add(def[1]);
      const call = /^calls: (\w+)/.exec(line);
      if (call?.[1]) calls.add(call[1]);
    }
    return [...calls].every((called) => defs.has(called));
  }

  async function build(event: PushEvent): Promise<void> {
    const branch = event.ref.slice('refs/heads/'.length);
    const key = `${event.project.id}:${event.after}`;
    if (seen.has(key)) return;
    seen.add(key);
    runs++;
    await post(event.project.id, event.after, branch, 'pending');
    if ((options.modeOf?.(branch) ?? 'normal') === 'pending-forever') return;
    await new Promise((resolve) => setTimeout(resolve, buildMs));
    if (stopped) return;
    const ok = await passes(event.project.id, event.after);
    if (!ok) failures++;
    await post(event.project.id, event.after, branch, ok ? 'success' : 'failed');
  }

  const listener = (event: PushEvent): void => {
    if (stopped || !event.ref.startsWith('refs/heads/') || event.after === ZERO) return;
    const running = build(event).catch((error: unknown) => {
      if (!stopped) console.error('simulated CI:', error);
    });
    building.add(running);
    void running.finally(() => building.delete(running));
  };
  sb.ctx.on.push.push(listener);

  return {
    get runs() {
      return runs;
    },
    get failures() {
      return failures;
    },
    get running() {
      return building.size;
    },
    passes,
    async idle() {
      while (building.size > 0) await Promise.all([...building]);
    },
    async stop() {
      stopped = true;
      const list = sb.ctx.on.push;
      const index = list.indexOf(listener);
      if (index >= 0) list.splice(index, 1);
      await Promise.all([...building]);
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}
