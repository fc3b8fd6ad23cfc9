/**
 * Explain, the status page's actions list and /metrics tell a merge request's story in its merge
 * queue (issue 37; docs/merge-queue.md#where-it-shows), driven the way the bot runs: the sandbox
 * delivers its hooks over HTTP to a running bot (`startRuntime`), the simulated CI builds every
 * pushed head, the sweep's timer is at 1 h (hooks alone move the queue).
 *
 * - Serial: a merge request whose CI fails is removed with one comment (status_failed); a fix pushed
 *   brings it back; it is merged by the serial queue. Explain says each step, with the comment and
 *   the merge commit, and its latest decision shows it merged, not a stale "opened".
 * - Train: two merge requests land in cars of a train; explain says which car, its commit and members.
 * - /metrics: landed by mode, removed by reason, the time to land, car builds, rounds.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/api/client.ts';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/ops/logger.ts';
import { createMetrics, type Metrics } from '../../src/ops/metrics.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { startRuntime, type Runtime } from '../../src/start-from-config.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { waitFor } from '../helpers/wait-for.ts';

const SECRET = 'merge-queue-story-secret';
const BOT = { username: 'mqs-bot', token: 'mqs-bot-token-0123456789', password: 'mqs-bot-password' };
const CI = { username: 'mqs-ci', token: 'mqs-ci-token-0123456789', password: 'mqs-ci-password' };
const LONG = 120_000;
const TEST_TIMEOUT = 300_000;

const rulesWith = (queue: string) => `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m${queue} }
`;

interface Answer {
  explanation: string;
  evaluation?: { item?: { state?: string } };
  actions: { call: string; detail: string }[];
  queue?: {
    kind: string;
    text: string;
    code?: string;
    commit?: string;
    comment?: string;
    mode?: string;
    car?: { position: number; members: number[] };
  }[];
}

/** A sample's value from the exposition text (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const head = line.slice(0, line.lastIndexOf(' '));
    if (wanted.every((pair) => head.includes(pair))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe("explain, the actions list and /metrics tell the merge queue's story (hook deliveries to a running bot)", () => {
  let sb: Sandbox;
  let ci: SimulatedCi;
  let admin: Client;
  let dir = '';
  let groupId = 0;
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'mqs-root-token', hookTimeoutMs: 10_000 });
    dir = mkdtempSync(path.join(tmpdir(), 'hookbot-mq-story-'));
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
    groupId = addGroup(sb.ctx.db, {
      name: 'mqs',
      owner_id: 1,
      members: [
        { user_id: bot.id, access_level: 40 },
        { user_id: ciUser.id, access_level: 30 },
      ],
    }).id;
    admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
    ci = startSimulatedCi(sb, { token: CI.token, git: { username: CI.username, password: CI.password } });
  });

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await ci?.stop();
    await sb?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function startQueueBot(name: string, queue: string): Promise<{ runtime: Runtime; metrics: Metrics }> {
    const home = path.join(dir, name);
    mkdirSync(path.join(home, 'rules'), { recursive: true });
    writeFileSync(path.join(home, 'rules', 'default.yml'), rulesWith(queue));
    const loaded = loadConfig({
      env: {
        HOOKBOT_STATE: path.join(home, 'state', 'hookbot.json'),
        HOOKBOT_PORT: '0',
        HOOKBOT_RULES: path.join(home, 'rules'),
        HOOKBOT_IN_DOCKER: '0',
        HOOKBOT_GIT_PASSWORD: BOT.password,
      },
    });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const config = loaded.config;
    config.pipeline.debounce_ms = 50;
    config.rules.watch = false;
    config.git.cache_dir = path.join(home, 'git');
    for (const sweep of ['rules', 'merge_watch', 'reconcile', 'hook_check'] as const)
      config.scheduler.sweeps[sweep] = { enabled: false, every: '1h' };
    config.scheduler.sweeps.merge_queue = { enabled: true, every: '1h' };
    const metrics = createMetrics({ defaultMetrics: false });
    const runtime = await startRuntime(
      config,
      { log: createLogger({ level: 'silent', format: 'json' }), metrics },
      { api: { url: sb.url, token: BOT.token }, webhookSecret: SECRET },
    );
    runtimes.push(runtime);
    return { runtime, metrics };
  }

  async function project(name: string, runtime: Runtime) {
    const rec = await addProject(sb.ctx, {
      name,
      namespace_id: groupId,
      creator_id: 1,
      initialFiles: INITIAL_FILES,
    });
    await admin.branches.protect(rec.id, 'master');
    await admin.hooks.create(rec.id, {
      url: runtime.bot.hookUrl,
      token: SECRET,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });
    return { id: rec.id, path: `mqs/${rec.path}` };
  }

  async function commitFile(
    projectId: number,
    branch: string,
    file: string,
    content: string,
    update = false,
  ) {
    const response = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: update ? 'PUT' : 'POST',
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

  async function openMergeRequest(projectId: number, branch: string, files: Record<string, string>) {
    await admin.branches.create(projectId, { branch_name: branch, ref: 'master' });
    for (const [file, content] of Object.entries(files)) await commitFile(projectId, branch, file, content);
    return admin.mergeRequests.create(projectId, {
      source_branch: branch,
      target_branch: 'master',
      title: `Change ${branch}`,
    });
  }

  const stateOf = async (projectId: number, mr: MergeRequest) =>
    (await admin.mergeRequests.get(projectId, mr.id)).state;

  async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string): Promise<T> {
    return waitFor(probe, LONG, what);
  }

  async function explain(runtime: Runtime, projectPath: string, iid: number): Promise<Answer> {
    const url = `${runtime.bot.url}/explain/${encodeURIComponent(projectPath)}/mr/${iid}`;
    return (await (await fetch(url, { headers: { accept: 'application/json' } })).json()) as Answer;
  }

  it(
    'serial: removed with its comment, came back after a fix, merged by the serial queue with the merge commit; the latest decision shows it merged; the metrics count each',
    async () => {
      const { runtime, metrics } = await startQueueBot('serial', '');
      const p = await project('serial', runtime);
      const mr = await openMergeRequest(p.id, 'fixme', { 'fixme.txt': 'calls: nowhere\n' });
      await ci.idle();
      await admin.mergeRequests.update(p.id, mr.id, { labels: ['automerge'] });
      // Its CI fails on the queue's push: out with one comment.
      const removed = await until(async () => {
        const answer = await explain(runtime, p.path, mr.iid);
        return answer.queue?.some((line) => line.kind === 'removed') ? answer : undefined;
      }, 'the removal in explain');
      const removal = removed.queue!.find((line) => line.kind === 'removed')!;
      expect(removal.code).toBe('status_failed');
      expect(removal.text).toMatch(
        /^removed \(status_failed\): taken out of the default queue for master: ci\/test failed on/,
      );
      expect(removal.comment).toMatch(/^Removed from the default merge queue for `master`: ci\/test failed/);
      expect(removed.explanation).toMatch(
        /^in the merge queue, oldest first \(\d+\):\n {2}\S+ {2}entered: queued in default for master/,
      );
      expect(removed.explanation).toContain(
        'removed (status_failed): taken out of the default queue for master',
      );
      expect(removed.explanation).toContain('comment: Removed from the default merge queue for `master`');
      // The status page's actions list shows it too.
      const status = (await (await fetch(`${runtime.bot.url}/status.json`)).json()) as {
        actions: { call: string; detail?: string; item?: { iid?: number } }[];
      };
      expect(
        status.actions.some(
          (a) => a.call === 'merge queue: removed (status_failed)' && a.item?.iid === mr.iid,
        ),
      ).toBe(true);

      // A fix pushed: it comes back, passes, and the serial queue merges it.
      await commitFile(p.id, 'fixme', 'fixme.txt', 'calls: foo\n', true);
      await until(async () => ((await stateOf(p.id, mr)) === 'merged' ? true : undefined), 'merged');
      const merged = await until(async () => {
        const answer = await explain(runtime, p.path, mr.iid);
        return answer.queue?.some((line) => line.kind === 'landed') ? answer : undefined;
      }, 'the landing in explain');
      const kinds = merged.queue!.map((line) => line.kind);
      expect(kinds).toEqual(['entered', 'removed', 'came_back', 'landed']);
      const landing = merged.queue!.at(-1)!;
      const master = (await admin.branches.get(p.id, 'master')).commit.id;
      expect(landing.mode).toBe('serial');
      expect(landing.commit).toBe(master);
      expect(landing.text).toMatch(
        /^merged by the serial queue: the default queue for master merged its tested head [0-9a-f]{7}; master is at [0-9a-f]{7} with it$/,
      );
      expect(landing.text).toContain(master.slice(0, 7));
      expect(merged.explanation).toContain('came back: queued again in default for master (it had left at');
      // Not a stale "opened": the latest decision is the landing, on the merge request merged.
      expect(merged.evaluation?.item?.state).toBe('merged');
      expect(merged.explanation).toMatch(
        /latest decision \(\w+, \S+\): the merge queue's, on the merge request as the queue left it:\nmerge queue: merged by the serial queue/,
      );
      expect(merged.actions.some((a) => a.call === 'merge queue: merged by the serial queue')).toBe(true);

      const text = await metrics.text();
      expect(sample(text, 'hookbot_merge_queue_landed_total', { mode: 'serial' })).toBe(1);
      expect(sample(text, 'hookbot_merge_queue_landed_total', { mode: 'train' })).toBe(0);
      expect(sample(text, 'hookbot_merge_queue_removed_total', { reason: 'status_failed' })).toBe(1);
      expect(sample(text, 'hookbot_merge_queue_removed_total', { reason: 'conflict' })).toBe(0);
      expect(sample(text, 'hookbot_merge_queue_time_to_land_seconds_count', { mode: 'serial' })).toBe(1);
      expect(sample(text, 'hookbot_merge_queue_rounds_total', { mode: 'serial' })).toBeGreaterThanOrEqual(2);
      // The queue is empty now: no entries, no trouble.
      expect(sample(text, 'hookbot_merge_queue_entries', { project: p.path })).toBe(0);
      expect(text).toContain('# TYPE hookbot_merge_queue_trouble gauge');
    },
    TEST_TIMEOUT,
  );

  it(
    'train: each merge request landed in car K of a train, with the commit and the members; the metrics count the landings and the cars',
    async () => {
      const { runtime, metrics } = await startQueueBot('train', ', depth: 3');
      const p = await project('train', runtime);
      const a = await openMergeRequest(p.id, 'a', { 'a.txt': 'calls: foo\n' });
      const b = await openMergeRequest(p.id, 'b', { 'b.txt': 'calls: foo\n' });
      await ci.idle();
      for (const mr of [a, b]) {
        await admin.mergeRequests.update(p.id, mr.id, { labels: ['automerge'] });
        await until(
          () => (runtime.store.queued().some((e) => e.mrId === mr.id) ? true : undefined),
          `!${mr.iid} queued`,
        );
      }
      await until(async () => {
        const states = await Promise.all([a, b].map((mr) => stateOf(p.id, mr)));
        return states.every((s) => s === 'merged') ? true : undefined;
      }, 'both landed');
      const master = (await admin.branches.get(p.id, 'master')).commit.id;
      for (const mr of [a, b]) {
        const answer = await until(async () => {
          const one = await explain(runtime, p.path, mr.iid);
          return one.queue?.some((line) => line.kind === 'landed') ? one : undefined;
        }, `!${mr.iid}'s landing in explain`);
        const landing = answer.queue!.find((line) => line.kind === 'landed')!;
        expect(landing.mode).toBe('train');
        expect(landing.car!.members).toContain(mr.iid);
        expect(landing.car!.position).toBeGreaterThanOrEqual(1);
        expect(landing.commit).toMatch(/^[0-9a-f]{40}$/);
        expect(landing.text).toMatch(
          new RegExp(
            `^landed in car ${landing.car!.position} of a train: master fast-forwarded to ${landing.commit!.slice(0, 7)}, the commit of car ${landing.car!.position} of the default merge train \\(members !\\d+(, !\\d+)*\\)$`,
          ),
        );
        expect(answer.evaluation?.item?.state).toBe('merged');
        expect(answer.explanation).toContain(`landed in car ${landing.car!.position} of a train`);
      }
      // b's car holds a's: the last landing is master's head.
      const last = (await explain(runtime, p.path, b.iid)).queue!.find((line) => line.kind === 'landed')!;
      expect(last.commit).toBe(master);
      const text = await metrics.text();
      expect(sample(text, 'hookbot_merge_queue_landed_total', { mode: 'train' })).toBe(2);
      expect(sample(text, 'hookbot_merge_queue_time_to_land_seconds_count', { mode: 'train' })).toBe(2);
      expect(
        sample(text, 'hookbot_merge_queue_car_builds_total', { outcome: 'passed' }),
      ).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'hookbot_merge_queue_rounds_total', { mode: 'train' })).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'hookbot_merge_queue_entries', { project: p.path })).toBe(0);
    },
    TEST_TIMEOUT,
  );
});
