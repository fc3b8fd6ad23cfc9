/**
 * The merge queue driven the way it runs in production: the sandbox delivers its project hooks over
 * HTTP to a running bot (`startRuntime`, what `hookbot serve` runs: receiver, pipeline, item
 * processor, executor, scheduler with the merge_queue sweep and a branch updater pushing over git
 * HTTP), and a simulated CI (test/helpers/simulated-ci.ts, talking to the sandbox over HTTP only)
 * builds every new head. No test code calls the item processor or a sweep: each step below is moved
 * by what the comment beside it names.
 *
 * What drives the queue (docs/merge-queue.md, "What moves the queue"):
 * - A label added: the Merge Request Hook → the pipeline → the `queue` rule enqueues the merge
 *   request → the item run wakes the merge_queue sweep → the head is brought up to master (a push).
 * - That push: the CI's `pending` then `success`/`failed` on the pushed head → Build Hooks → the
 *   item run of a queued merge request wakes the sweep → it merges (or removes with a comment); the
 *   merge's own hooks wake it again, and the next merge request starts in the same run.
 * - A push by someone else, or a removed label: the Merge Request Hook of that change → the item run
 *   (a removed label: the rule takes it out there) wakes the sweep → out at once, the next one goes.
 * - A status that never reports sends no hook: the sweep's timer finds the timeout. Only there does a
 *   test need the timer; the others run with the sweep's interval at 1 h, so hooks alone move them.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'merge-queue-hooks-secret';
const BOT = { username: 'mqh-bot', token: 'mqh-bot-token-0123456789', password: 'mqh-bot-password' };
const CI = { username: 'mqh-ci', token: 'mqh-ci-token-0123456789', password: 'mqh-ci-password' };
/** A maintainer of the project's group, who takes a label off. */
const MAINTAINER = { username: 'mqh-maintainer', token: 'mqh-maintainer-token-0123456789' };
/** Generous: a busy 2-core machine runs git, the sandbox, the bot and the CI at once. */
const LONG = 120_000;
const TEST_TIMEOUT = 300_000;

const rulesWith = (statusTimeout: string) => `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: ${statusTimeout}, max_updates: 3 }
`;

describe('merge queue driven by hook deliveries to a running bot (over HTTP, the bot as it runs)', () => {
  let sb: Sandbox;
  let ci: SimulatedCi;
  let admin: Client;
  let maintainer: Client;
  let dir = '';
  let groupId = 0;
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mqh-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-mq-hooks-'));
    const bot = addUser(sb.ctx.db, {
      username: BOT.username,
      private_token: BOT.token,
      password: BOT.password,
    });
    const ciUser = addUser(sb.ctx.db, {
      username: CI.username,
      private_token: CI.token,
      password: CI.password,
    });
    const maintainerUser = addUser(sb.ctx.db, {
      username: MAINTAINER.username,
      private_token: MAINTAINER.token,
      password: 'mqh-maintainer-password',
    });
    // The bot is a master of the group (it merges into protected master and pushes source
    // branches); the CI a developer (it posts statuses).
    groupId = addGroup(sb.ctx.db, {
      name: 'mqh',
      owner_id: 1,
      members: [
        { user_id: bot.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
        { user_id: maintainerUser.id, access_level: 40 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    maintainer = createClient({ baseUrl: sb.url, token: MAINTAINER.token, retry: { limit: 0 } });
    // Builds on branches named `stuck-*` post `pending` and never report.
    ci = startSimulatedCi(sb, {
      token: CI.token,
      git: { username: CI.username, password: CI.password },
      modeOf: (branch) => (branch.startsWith('stuck-') ? 'pending-forever' : 'normal'),
    });
  });

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await ci?.stop();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A running bot as `hookbot serve` composes it, with its own state file and rules, the merge_queue
   * sweep every `queueEvery` and the other sweeps off (nothing but hooks and that timer acts).
   */
  async function startQueueBot(
    name: string,
    statusTimeout: string,
    queueEvery: string,
    git: { password?: boolean; defaultCacheDir?: boolean } = {},
  ): Promise<Runtime> {
    const home = path.join(dir, name);
    mkdirSync(path.join(home, 'rules'), { recursive: true });
    writeFileSync(path.join(home, 'rules', 'default.yml'), rulesWith(statusTimeout));
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(home, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        ...(git.password === false ? {} : { HOOKBOT_GIT_PASSWORD: BOT.password }),
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    // The default (`data/git-cache`, relative) is left alone when asked: it is what users run.
    if (!git.defaultCacheDir) config.git.cache_dir = path.join(home, 'git');
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    config.scheduler.sweeps.merge_queue = { enabled: true, every: queueEvery };
    const runtime = await startRuntime(
      config,
      {
        log: createLogger({ level: (process.env.MQH_LOG as 'info' | undefined) ?? 'silent', format: 'json' }),
        metrics: createMetrics(),
      },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
    runtimes.push(runtime);
    return runtime;
  }

  /** A project with a protected master and the bot's project hook (secret token, build events on). */
  async function project(name: string, runtime: Runtime) {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: INITIAL_FILES,
    });
    await admin.branches.protect(rec.id, 'master');
    expect((await admin.branches.get(rec.id, 'master')).protected).toBe(true);
    await admin.hooks.create(rec.id, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
    return { id: rec.id, path: `mqh/${rec.path}` };
  }

  async function commitFile(projectId: number, branch: string, file: string, content: string) {
    const exists = Object.hasOwn(INITIAL_FILES, file);
    const response = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: exists ? 'PUT' : 'POST',
      headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({
        file_path: file,
        branch_name: branch,
        content,
        commit_message: `${branch}: ${file}`,
      }),
    });
    if (!response.ok) throw new Error(`could not commit ${file} on ${branch}: ${response.status}`);
  }

  /** A merge request from a new branch with `files`, not labelled yet, green (or pending) on its head. */
  async function openMergeRequest(projectId: number, branch: string, files: Record<string, string>) {
    await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
    for (const [file, content] of Object.entries(files)) await commitFile(projectId, branch, file, content);
    return admin.mergeRequests.create(projectId, {
      source_branch: branch,
      target_branch: 'master',
      title: `Change ${branch}`,
    });
  }

  const label = (projectId: number, mr: MergeRequest, labels: string[]) =>
    admin.mergeRequests.update(projectId, mr.id, { labels });

  async function stateOf(projectId: number, mr: MergeRequest): Promise<string> {
    return (await admin.mergeRequests.get(projectId, mr.id)).state;
  }

  async function botNotes(projectId: number, mr: MergeRequest): Promise<string[]> {
    const bodies: string[] = [];
    for await (const note of admin.notes.listMergeRequestNotes(projectId, mr.id))
      if (!note.system && note.author.username === BOT.username) bodies.push(note.body);
    return bodies;
  }

  /** The latest `ci/test` state posted on `sha`, through the API. */
  async function ciState(projectId: number, sha: string): Promise<string | undefined> {
    let latest: { id: number; status: string } | undefined;
    for await (const status of admin.statuses.list(projectId, sha))
      if (status.name === 'ci/test' && (!latest || status.id > latest.id)) latest = status;
    return latest?.status;
  }

  /** Master's first-parent line through the API, oldest first. */
  async function masterLine(projectId: number) {
    const line = [];
    for (let commit = await admin.commits.get(projectId, 'master'); ;) {
      line.unshift(commit);
      const parent = commit.parent_ids[0];
      if (!parent) break;
      commit = await admin.commits.get(projectId, parent);
    }
    return line;
  }

  const explain = async (runtime: Runtime, projectPath: string, mr: MergeRequest) =>
    (await fetch(`${runtime.bot.url}/explain/${encodeURIComponent(projectPath)}/mr/${mr.iid}`)).text();

  /**
   * waitFor, and when it times out, the sandbox's deliveries that got no 2xx answer: a delivery the
   * server dropped (refused, reset, timed out: real servers drop them too) is the first suspect.
   */
  async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
    try {
      return await waitFor(probe, LONG, what);
    } catch (error) {
      const failed = sb.ctx.hooks
        .recent()
        .filter((d) => d.status === undefined || d.status >= 300)
        .map((d) => `${d.at} ${d.event} ${d.url}: ${d.status ?? d.error}`);
      throw new Error(`${(error as Error).message}; deliveries not accepted: ${JSON.stringify(failed)}`);
    }
  }

  const active = (runtime: Runtime, projectId: number) =>
    runtime.store.queued().filter((entry) => entry.projectId === projectId && !entry.left);

  describe('with the sweep on a 1 h timer: hooks alone move the queue', () => {
    let bot: Runtime;
    beforeAll(async () => {
      bot = await startQueueBot('hooks', '10m', '1h');
    });

    it(
      'three merge requests labelled at once are merged one at a time, each tested on the current master; the one in a semantic conflict leaves with one comment; master is never broken',
      async () => {
        const p = await project('semantic', bot);
        // Each green alone. `rename` renames foo to bar, `caller` calls foo: together master breaks,
        // and no textual merge sees it. `docs` touches neither.
        const rename = await openMergeRequest(p.id, 'rename', {
          'lib.txt': 'def bar\n',
          'r.txt': 'calls: bar\n',
        });
        const caller = await openMergeRequest(p.id, 'caller', { 'a.txt': 'calls: foo\n' });
        const docs = await openMergeRequest(p.id, 'docs', { 'docs.txt': 'hello\n' });
        const all = [rename, caller, docs];
        await ci.idle();
        for (const mr of all) {
          const head = (await admin.branches.get(p.id, mr.source_branch)).commit.id;
          await until(async () => ((await ciState(p.id, head)) === 'success' ? true : undefined), 'CI green');
        }

        // Labelled at once: the hooks queue them, and the queue takes it from there.
        await Promise.all(all.map((mr) => label(p.id, mr, ['automerge'])));
        await until(async () => {
          const states = await Promise.all(all.map((mr) => stateOf(p.id, mr)));
          const merged = states.filter((state) => state === 'merged').length;
          return merged === 2 && active(bot, p.id).length === 0 ? true : undefined;
        }, 'two merged and the queue empty');
        await ci.idle();

        // `docs` always goes in; of `rename` and `caller`, the one tested second fails on top of the other.
        expect(await stateOf(p.id, docs)).toBe('merged');
        const [left] = await Promise.all(
          [rename, caller].map(async (mr) => ((await stateOf(p.id, mr)) === 'opened' ? mr : undefined)),
        ).then((found) => found.filter((mr) => mr !== undefined));
        expect(left).toBeDefined();
        const notes = await botNotes(p.id, left!);
        expect(notes).toHaveLength(1);
        expect(notes[0]).toMatch(
          /^Removed from the default merge queue for `master`: ci\/test failed on [0-9a-f]{7} \(the source branch merged with master at [0-9a-f]{7}\)/,
        );
        expect(notes[0]).toContain('it enters again at the end once the rule matches it again');
        for (const mr of all.filter((one) => one !== left)) expect(await botNotes(p.id, mr)).toEqual([]);
        // Explain (the bot's ops port) says it left and how it comes back.
        expect(await explain(bot, p.path, left!)).toMatch(
          /^merge queue: left the default queue for master at [0-9a-f]{7}: ci\/test failed on .*; it enters again after a push/,
        );

        // Master's history: the initial commit and two merges, every one of them green (0 broken
        // commits), and each merge brought in a head that already held the master it was merged into,
        // tested green itself: what was tested is what master became, one at a time.
        const line = await masterLine(p.id);
        expect(line).toHaveLength(3);
        for (const commit of line) {
          expect(await ci.passes(p.id, commit.id)).toBe(true);
          expect(await ciState(p.id, commit.id)).toBe('success');
        }
        for (let i = 1; i < line.length; i++) {
          const [before, tested] = line[i]!.parent_ids as [string, string];
          expect(before).toBe(line[i - 1]!.id);
          const compare = await sb.ctx.git.compare(p.id, tested, p.id, before);
          expect(compare.commits).toEqual([]);
          expect(await ciState(p.id, tested)).toBe('success');
        }
      },
      TEST_TIMEOUT,
    );

    it(
      'a push by someone else to the queued head takes it out at once, the next one goes, and it comes back at the end',
      async () => {
        const p = await project('pushed', bot);
        // Its CI never reports: without the push it would hold the queue for 10 minutes.
        const pushed = await openMergeRequest(p.id, 'stuck-pushed', { 'p.txt': 'calls: foo\n' });
        const next = await openMergeRequest(p.id, 'after-push', { 'n.txt': 'calls: foo\n' });
        await ci.idle();
        await label(p.id, pushed, ['automerge']);
        const tested = await until(
          () => active(bot, p.id).find((entry) => entry.mrId === pushed.id)?.pinnedSha,
          'the first merge request to be tested',
        );
        await label(p.id, next, ['automerge']);
        await until(() => (active(bot, p.id).length === 2 ? true : undefined), 'both queued');

        // Someone pushes to the branch under test: its Merge Request Hook wakes the queue.
        await commitFile(p.id, 'stuck-pushed', 'late.txt', 'late\n');
        await until(
          async () => ((await stateOf(p.id, next)) === 'merged' ? true : undefined),
          'the next merge request to be merged',
        );
        expect(await stateOf(p.id, pushed)).toBe('opened');
        expect((await admin.branches.get(p.id, 'stuck-pushed')).commit.id).not.toBe(tested);
        expect(await botNotes(p.id, pushed)).toEqual([]);
        expect(await botNotes(p.id, next)).toEqual([]);
        // Evaluated again on its new head, its rule still matches: back in the queue, at the end,
        // and tested from the start on the new head (brought up to the master `next` made).
        const again = await until(
          () =>
            active(bot, p.id).find(
              (entry) =>
                entry.mrId === pushed.id && entry.pinnedSha !== undefined && entry.pinnedSha !== tested,
            ),
          'the pushed merge request to be tested again',
        );
        expect(again.pinnedSha).toBe((await admin.branches.get(p.id, 'stuck-pushed')).commit.id);
        expect(again.targetSha).toBe((await admin.branches.get(p.id, 'master')).commit.id);
      },
      TEST_TIMEOUT,
    );

    it(
      'a removed label takes the queued head out at once, without a comment, and the next one goes',
      async () => {
        const p = await project('relabelled', bot);
        const relabelled = await openMergeRequest(p.id, 'stuck-relabelled', { 'q.txt': 'calls: foo\n' });
        const next = await openMergeRequest(p.id, 'after-label', { 'm.txt': 'calls: foo\n' });
        await ci.idle();
        await label(p.id, relabelled, ['automerge']);
        await until(
          () => active(bot, p.id).find((entry) => entry.mrId === relabelled.id)?.pinnedSha,
          'the first merge request to be tested',
        );
        await label(p.id, next, ['automerge']);
        await until(() => (active(bot, p.id).length === 2 ? true : undefined), 'both queued');
        // The status page shows the queue in order.
        const status = (await (await fetch(`${bot.bot.url}/status.json`)).json()) as {
          mergeQueue: { project: string; entries?: unknown[] }[];
        };
        expect(JSON.stringify(status.mergeQueue)).toContain(p.path);

        // A maintainer takes the label off. (One user's two edits within a second send byte-identical
        // Merge Request Hooks, v3 hooks carrying no labels and whole seconds; the bot runs the items
        // of such a copy again, tested in current-state.test.ts, case 6.)
        await maintainer.mergeRequests.update(p.id, relabelled.id, { labels: [] });
        await until(
          async () => ((await stateOf(p.id, next)) === 'merged' ? true : undefined),
          'the next merge request to be merged',
        );
        expect(await stateOf(p.id, relabelled)).toBe('opened');
        expect(bot.store.queued().filter((entry) => entry.mrId === relabelled.id)).toEqual([]);
        expect(await botNotes(p.id, relabelled)).toEqual([]);
        expect(await explain(bot, p.path, relabelled)).toContain(
          'merge queue: left the default queue for master: queue automerge no longer matches',
        );
      },
      TEST_TIMEOUT,
    );
  });

  describe('with the sweep on a short timer', () => {
    it(
      'a status that never reports holds the queue only until status_timeout; then the next one goes',
      async () => {
        const bot = await startQueueBot('timeout', '4s', '1s');
        const p = await project('timeout', bot);
        const stuck = await openMergeRequest(p.id, 'stuck-forever', { 's.txt': 'calls: foo\n' });
        const next = await openMergeRequest(p.id, 'after-timeout', { 't.txt': 'calls: foo\n' });
        await ci.idle();
        await label(p.id, stuck, ['automerge']);
        const since = await until(
          () => active(bot, p.id).find((entry) => entry.mrId === stuck.id)?.testingSince,
          'the stuck merge request to be tested',
        );
        await label(p.id, next, ['automerge']);
        await until(
          async () => ((await stateOf(p.id, next)) === 'merged' ? true : undefined),
          'the next merge request to be merged',
        );
        expect(await stateOf(p.id, stuck)).toBe('opened');
        const notes = await botNotes(p.id, stuck);
        expect(notes).toHaveLength(1);
        expect(notes[0]).toMatch(/ci\/test \((pending|running)\) did not succeed on [0-9a-f]{7} within 4 s/);
        // Not before its time.
        const left = bot.store.queued().find((entry) => entry.mrId === stuck.id)?.left;
        expect(left?.at).toBeGreaterThanOrEqual(since + 4_000);
      },
      TEST_TIMEOUT,
    );
  });

  describe('with the git settings as users leave them', () => {
    it(
      'the default cache folder (data/git-cache, relative) works when hookbot is started in another folder',
      async () => {
        const started = process.cwd();
        // Where a user starts hookbot: a folder of their own, the git cache left at its default.
        const folder = path.join(dir, 'started-here');
        mkdirSync(folder, { recursive: true });
        process.chdir(folder);
        try {
          const bot = await startQueueBot('default-cache', '10m', '1h', { defaultCacheDir: true });
          const p = await project('default-cache', bot);
          const mr = await openMergeRequest(p.id, 'behind-default', { 'd.txt': 'calls: foo\n' });
          // Master moves: the branch must be brought up (fetch, merge, push through the cache).
          await commitFile(p.id, 'master', 'moved.txt', 'moved\n');
          await ci.idle();
          await label(p.id, mr, ['automerge']);
          await until(async () => ((await stateOf(p.id, mr)) === 'merged' ? true : undefined), 'the merge');
          const cache = path.join(folder, 'data', 'git-cache');
          expect(readdirSync(cache).filter((name) => name.endsWith('.git'))).toHaveLength(1);
          expect(existsSync(path.join(cache, 'data'))).toBe(false);
        } finally {
          process.chdir(started);
        }
      },
      TEST_TIMEOUT,
    );

    it(
      'a queue that cannot work (no git credentials) says so on the status page, not only in the log',
      async () => {
        const bot = await startQueueBot('no-credentials', '10m', '1h', { password: false });
        const p = await project('no-credentials', bot);
        const mr = await openMergeRequest(p.id, 'waits', { 'w.txt': 'calls: foo\n' });
        await ci.idle();
        await label(p.id, mr, ['automerge']);
        const state = await until(async () => {
          const status = (await (await fetch(`${bot.bot.url}/status.json`)).json()) as {
            mergeQueue: { project: string; state: string }[];
          };
          return status.mergeQueue.find((q) => q.project === p.path && q.state.includes('cannot move'))
            ?.state;
        }, 'the status page to say the queue cannot move');
        expect(state).toMatch(
          /^position 1 of 1 in the default queue for master; the queue cannot move: \d+ steps? failed in a row for \d+ s, the last with: no git credentials are configured/,
        );
        expect(await explain(bot, p.path, mr)).toContain('the queue cannot move');
        const page = await (await fetch(`${bot.bot.url}/status`)).text();
        expect(page).toContain('the queue cannot move');
      },
      TEST_TIMEOUT,
    );
  });
});
