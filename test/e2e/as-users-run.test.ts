/**
 * hookbot as a user runs it, and nothing else: `npm start` in a fresh copy of the project (its own
 * working directory: `data/` and `rules/` are its own), no configuration file, every default left
 * as it is (relative paths included), inside a container as a dev container or a CI image is one
 * (a `/.dockerenv`-like file). The test talks to it only as a user does: the banner it prints, the
 * sandbox's API over HTTP as the demo users, the bot's HTTP routes. No bot code is imported.
 *
 * What it checks, each a promise that once broke on this path (issue 29):
 * - `npm start` comes up (on loopback, container or not) and acts on an issue opened as the README
 *   says;
 * - the merge queue, with its default cache folder (`data/git-cache`, relative), merges two merge
 *   requests, the second brought up to the first's merge with a push;
 * - a merge request that changes `.hookbot.yml`, whose CI posts a status with the open and with each
 *   push (one burst each time), is reviewed: a `hookbot/config` status on each head and one comment.
 *
 * The settings it sets, each because a test needs it (every other one is the default):
 * - `HOOKBOT_CONTAINER_FILE`: the container signal, a file of the test's own standing for
 *   `/.dockerenv` (documented in docs/configuration.md), so the run is "in a container" on any
 *   machine, and without root;
 * - `HOOKBOT_PORT=0`, `HOOKBOT_SANDBOX_PORT=0`: other tests run at the same time on this machine, and
 *   the default ports (3000, 8929) may be taken; the banner says which ports were picked;
 * - `HOOKBOT_REPOSITORY_RULES=true`: rules in the repository are off by default (an operator's
 *   choice), and the review of a `.hookbot.yml` merge request is that feature;
 * - `rules/acme/web.yml` in the copy: the shipped rules have no `queue` rule, so acme/web gets one
 *   (after the shipped rules, which it extends); acme/helpdesk keeps the shipped rules alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
/** Generous: a busy 2-core machine runs npm, tsx, the sandbox, git and the bot at once. */
const LONG = 180_000;
const ALICE = 'alice-demo-token';

/** The queue rule acme/web gets; the shipped rules still apply first. */
const WEB_RULES = `extends: [../default.yml]
rules:
  - name: queue when labelled
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - state: opened
      - labels: { any: [queue] }
    do:
      - queue: { statuses: [ci/test] }
`;

/**
 * A valid .hookbot.yml: what a team proposes in a merge request. Numbered, so that each merge
 * request's commit is its own (two identical commits in one second would be one sha).
 */
const teamRules = (n: number) => `rules:
  - name: label support questions ${n}
    on: [issue.open]
    for: issues
    if:
      - title: { matches: '(?i)how do i' }
    do:
      - label: { add: [question] }
`;

interface Running {
  child: ChildProcess;
  output: () => string;
  /** Once npm and everything it started have ended (their output closed): npm's code or signal. */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start` in `cwd`, in its own process group (npm, its shell and node stop together). */
function npmStart(cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn('npm', ['start'], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  // 'close', not 'exit': npm may end before the bot it started has finished stopping.
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => out, ended };
}

/** The environment a user's shell would have: nothing of hookbot's own set, but what is named here. */
function userEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('HOOKBOT_') && !name.startsWith('npm_') && !name.startsWith('VITEST'))
      env[name] = value;
  return { ...env, ...extra };
}

describe('hookbot as users run it: npm start in a fresh copy, defaults untouched, in a container', () => {
  let root = '';
  let work = '';
  let started: Running | undefined;
  let api = '';
  let bot = '';
  let admin = '';
  /** npm start up and its banner read; each test awaits it first. */
  let startup: Promise<void> = Promise.resolve();

  /** The sandbox's API as a user with `token`; JSON in and out, and a clear error otherwise. */
  async function call<T>(token: string, method: string, route: string, body?: unknown): Promise<T> {
    const res = await fetch(`${api}${route}`, {
      method,
      headers: { 'private-token': token, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  const project = (name: string) => `/projects/${encodeURIComponent(`acme/${name}`)}`;

  /** A branch from master with one file committed on it, as a developer would push it. */
  async function branchWithFile(name: string, branch: string, file: string, content: string) {
    await call(admin, 'POST', `${project(name)}/repository/branches`, { branch_name: branch, ref: 'master' });
    await call(admin, 'POST', `${project(name)}/repository/files`, {
      file_path: file,
      branch_name: branch,
      content,
      commit_message: `Add ${file}`,
    });
    return (
      await call<{ commit: { id: string } }>(admin, 'GET', `${project(name)}/repository/branches/${branch}`)
    ).commit.id;
  }

  const openMergeRequest = (name: string, branch: string, title: string) =>
    call<{ id: number; iid: number }>(ALICE, 'POST', `${project(name)}/merge_requests`, {
      source_branch: branch,
      target_branch: 'master',
      title,
    });

  const postStatus = (name: string, sha: string, state: string, context = 'ci/test') =>
    call(ALICE, 'POST', `${project(name)}/statuses/${sha}`, { state, name: context });

  const statusesOf = (name: string, sha: string) =>
    call<{ name: string; status: string }[]>(
      admin,
      'GET',
      `${project(name)}/repository/commits/${sha}/statuses`,
    );

  const reviewOf = async ({ sha }: { sha: string }) =>
    (await statusesOf('helpdesk', sha)).find((status) => status.name === 'hookbot/config');

  /** Every head gets its `hookbot/config` status (success: the rules are valid), or the failure names the ones that did not. */
  async function expectReviewed(heads: { id: number; sha: string }[], what: string): Promise<void> {
    await waitFor(
      async () => ((await Promise.all(heads.map(reviewOf))).every(Boolean) ? true : undefined),
      LONG,
      `a hookbot/config status on each head of the merge requests ${what}`,
    ).catch(async (error: Error) => {
      const missing: string[] = [];
      for (const head of heads)
        if (!(await reviewOf(head))) missing.push(`merge request ${head.id} at ${head.sha.slice(0, 8)}`);
      throw new Error(
        `${error.message}: ${heads.length - missing.length} of ${heads.length} reviewed; not: ${missing.join(', ')}`,
      );
    });
    for (const head of heads) expect((await reviewOf(head))?.status).toBe('success');
  }

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'hookbot-as-users-'));
    // A fresh copy of the project, as a clone is: the sources, the shipped rules, package.json;
    // node_modules is the one `npm install` made (linked: nothing in it is written).
    work = path.join(root, 'hookbot');
    mkdirSync(work);
    for (const entry of ['bin', 'src', 'rules', 'package.json', 'tsconfig.json', 'config.example.yml'])
      cpSync(path.join(REPO, entry), path.join(work, entry), { recursive: true });
    symlinkSync(path.join(REPO, 'node_modules'), path.join(work, 'node_modules'), 'dir');
    mkdirSync(path.join(work, 'rules', 'acme'));
    writeFileSync(path.join(work, 'rules', 'acme', 'web.yml'), WEB_RULES);
    // The container signal: a file standing for /.dockerenv (HOOKBOT_IN_DOCKER is not set).
    const signal = path.join(root, 'dockerenv');
    writeFileSync(signal, '');

    started = npmStart(
      work,
      userEnv({
        HOOKBOT_CONTAINER_FILE: signal,
        HOOKBOT_PORT: '0',
        HOOKBOT_SANDBOX_PORT: '0',
        HOOKBOT_REPOSITORY_RULES: 'true',
      }),
    );
    const running = started;
    startup = (async () => {
      api = await waitFor(
        () => {
          const out = running.output();
          if (/could not start|npm ERR!|npm error/.test(out)) throw new Error(`npm start failed:\n${out}`);
          return /sandbox:\s+(http:\/\/127\.0\.0\.1:\d+\/api\/v3)/.exec(out)?.[1];
        },
        LONG,
        "npm start's banner",
      );
      admin = /admin token: (\S+)/.exec(running.output())![1]!;
      bot = /bot:\s+(http:\/\/[^\s]+) \(hooks at/.exec(running.output())![1]!;
    })();
    // A start that fails fails each test with its output (a failing beforeAll would mark them skipped).
    await startup.catch(() => undefined);
  }, LONG);

  afterAll(async () => {
    if (
      started?.child.pid !== undefined &&
      started.child.exitCode === null &&
      started.child.signalCode === null
    ) {
      // Still running (a test failed before the last one stopped it).
      process.kill(-started.child.pid, 'SIGINT');
      const code = await Promise.race([
        started.ended,
        new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 30_000)),
      ]);
      if (code === 'hung') process.kill(-started.child.pid, 'SIGKILL');
    }
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it(
    'comes up on loopback in the container and labels an issue opened as the README says',
    async () => {
      await startup;
      expect(bot).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(started!.output()).toContain('hookbot is running on the embedded sandbox');
      // The README's example, as alice.
      const issue = await call<{ id: number; iid: number }>(ALICE, 'POST', `${project('web')}/issues`, {
        title: 'It crashes on start',
      });
      const labels = await waitFor(
        async () => {
          const now = await call<{ labels: string[] }>(ALICE, 'GET', `${project('web')}/issues/${issue.id}`);
          return now.labels.includes('needs-triage') ? now.labels : undefined;
        },
        LONG,
        'the bot to label the issue',
      );
      expect(labels.sort()).toEqual(['bug', 'needs-triage']);
      // Why it acted, from the bot's own route, as the banner shows (the decision is recorded once
      // the run has finished).
      const explain = await waitFor(
        async () => {
          const text = await (await fetch(`${bot}/explain/acme%2Fweb/issue/${issue.id}`)).text();
          return text.includes('triage bug reports') ? text : undefined;
        },
        LONG,
        'the decision in explain',
      );
      expect(explain).toContain('matched');
    },
    LONG,
  );

  it(
    'the merge queue, with the default cache folder (data/git-cache), merges two merge requests',
    async () => {
      await startup;
      const heads = [
        await branchWithFile('web', 'queue-one', 'one.txt', 'one\n'),
        await branchWithFile('web', 'queue-two', 'two.txt', 'two\n'),
      ];
      const mrs = [
        await openMergeRequest('web', 'queue-one', 'Add the first file to the queue'),
        await openMergeRequest('web', 'queue-two', 'Add the second file to the queue'),
      ];
      // The CI: ci/test success on every new head of the two branches (the queue pushes a merge
      // commit to the second), as a CI reports each push. Polled through the API as any client.
      const built = new Set<string>();
      let ciError: unknown;
      let ciRunning = true;
      const ci = (async () => {
        while (ciRunning) {
          try {
            for (const branch of ['queue-one', 'queue-two']) {
              const head = await call<{ commit: { id: string } }>(
                admin,
                'GET',
                `${project('web')}/repository/branches/${branch}`,
              ).catch(() => undefined);
              const sha = head?.commit.id;
              if (sha === undefined || built.has(sha)) continue;
              built.add(sha);
              await postStatus('web', sha, 'success');
            }
          } catch (error) {
            ciError = error;
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      try {
        await waitFor(() => (heads.every((sha) => built.has(sha)) ? true : undefined), LONG, 'the CI');
        for (const mr of mrs)
          await call(admin, 'PUT', `${project('web')}/merge_requests/${mr.id}`, { labels: 'queue' });
        await waitFor(
          async () => {
            const states = await Promise.all(
              mrs.map(
                async (mr) =>
                  (await call<{ state: string }>(admin, 'GET', `${project('web')}/merge_requests/${mr.id}`))
                    .state,
              ),
            );
            return states.every((state) => state === 'merged') ? true : undefined;
          },
          LONG,
          'both merge requests merged',
        ).catch((error: Error) => {
          // What the bot logged (the queue's errors are there), for whoever reads the failure.
          throw new Error(`${error.message}; the bot's output ends with:\n${started!.output().slice(-4000)}`);
        });
      } finally {
        ciRunning = false;
        await ci;
      }
      expect(ciError).toBeUndefined();
      // Master holds both files, and the cache is where the default says: data/git-cache in the
      // working directory, once (not data/git-cache/data/git-cache).
      for (const file of ['one.txt', 'two.txt'])
        await call(admin, 'GET', `${project('web')}/repository/files?file_path=${file}&ref=master`);
      const cache = path.join(work, 'data', 'git-cache');
      expect(readdirSync(cache).some((name) => name.endsWith('.git'))).toBe(true);
      expect(existsSync(path.join(cache, 'data'))).toBe(false);
    },
    LONG * 2,
  );

  it(
    'merge requests that change .hookbot.yml, their CI reporting with the open and with each push, are reviewed: hookbot/config on every head and one comment each',
    async () => {
      await startup;
      // Six merge requests, as a CI that reports on every push does to a team: one burst alone could
      // fall either way (the events of a burst reach the bot in any order); every one must be reviewed.
      const mrs: { id: number; branch: string }[] = [];
      const heads: { id: number; sha: string }[] = [];
      for (const n of [1, 2, 3, 4, 5, 6]) {
        const branch = `team-rules-${n}`;
        const sha = await branchWithFile('helpdesk', branch, '.hookbot.yml', teamRules(n));
        // The open, and the CI's first word on the head sent with it, as a CI that reports `pending`
        // at once does: the server sees them within a millisecond, and the bot in one burst.
        const [mr] = await Promise.all([
          openMergeRequest('helpdesk', branch, `Our own triage rules (${n})`),
          postStatus('helpdesk', sha, 'pending', 'ci/build'),
        ]);
        mrs.push({ id: mr.id, branch });
        heads.push({ id: mr.id, sha });
      }
      await expectReviewed(heads, 'opened');

      // A push to each (the file changed again), and the CI's `pending` on the new head at once:
      // push, merge_request.update and status.changed in one burst. The review follows the head.
      const pushed: { id: number; sha: string }[] = [];
      for (const [i, mr] of mrs.entries()) {
        await call(admin, 'PUT', `${project('helpdesk')}/repository/files`, {
          file_path: '.hookbot.yml',
          branch_name: mr.branch,
          content: teamRules(i + 10),
          commit_message: 'Rename the rule',
        });
        const sha = (
          await call<{ commit: { id: string } }>(
            admin,
            'GET',
            `${project('helpdesk')}/repository/branches/${mr.branch}`,
          )
        ).commit.id;
        await postStatus('helpdesk', sha, 'pending', 'ci/build');
        pushed.push({ id: mr.id, sha });
      }
      await expectReviewed(pushed, 'pushed to');

      // One comment each, edited in place on the push (never a second one).
      for (const mr of mrs) {
        const notes = await call<{ body: string; system: boolean; author: { username: string } }[]>(
          admin,
          'GET',
          `${project('helpdesk')}/merge_requests/${mr.id}/notes`,
        );
        const mine = notes.filter((note) => !note.system && note.author.username === 'hookbot');
        expect(mine, `the bot's comments on merge request ${mr.id}`).toHaveLength(1);
        expect(mine[0]!.body).toContain('.hookbot.yml');
      }
    },
    LONG * 2,
  );

  it('stops cleanly on Ctrl-C', async () => {
    await startup;
    // Ctrl-C, as a user stops it: to the whole group, as a terminal sends it.
    process.kill(-started!.child.pid!, 'SIGINT');
    const { code, signal } = await started!.ended;
    // The bot says it stopped (its exit code 0 follows); npm itself ends with the Ctrl-C it got.
    expect(started!.output()).toContain('hookbot: stopped');
    expect(code === 0 || signal === 'SIGINT', `npm ended with ${code ?? signal}`).toBe(true);
    expect(started!.output()).not.toMatch(/TypeError|Unhandled|\n\s+at /);
  }, 60_000);
});
