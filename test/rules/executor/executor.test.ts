/**
 * The executor against the sandbox over HTTP (real git, real merges): every write re-checks right
 * before it acts, the outbox makes retries complete once, merges are pinned to the evaluated head
 * and never happen twice, and dry-run makes no call at all.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../../../src/api/client.ts';
import { ApiError } from '../../../src/api/errors.ts';
import { extractMarkers } from '../../../src/rules/engine/comment-marker.ts';
import { backoffMs } from '../../../src/rules/executor/ids.ts';
import { createExecutor, type ExecutorOptions } from '../../../src/rules/executor/executor.ts';
import { evaluate } from '../../../src/rules/engine/engine.ts';
import { createSnapshotReader } from '../../../src/rules/item/read-snapshot.ts';
import { createMemoryStore } from '../../../src/state/memory-store.ts';
import type { StateStore } from '../../../src/state/store.ts';
import { startFaultProxy, type FaultMode, type FaultProxy } from '../../helpers/fault-proxy.ts';
import {
  evaluateItem,
  makeExecWorld,
  openMergeRequest,
  pushCommit,
  recordingLog,
  type ExecWorld,
} from '../../helpers/exec-world.ts';
import { useSandbox } from '../../helpers/sandbox.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { rulesFrom } from '../support.ts';

const ctx = useSandbox();
let world: ExecWorld;
let proxies: FaultProxy[] = [];

beforeAll(() => {
  world = makeExecWorld(ctx().sb, 'exec');
});

afterEach(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  proxies = [];
});

async function proxy(): Promise<FaultProxy> {
  const started = await startFaultProxy(ctx().sb.url);
  proxies.push(started);
  return started;
}

async function openStore(): Promise<StateStore> {
  const store = createMemoryStore();
  await store.open();
  return store;
}

function executorFor(client: Client, store: StateStore, options: Partial<ExecutorOptions> = {}) {
  return createExecutor({ client, store, random: () => 0.5, ...options });
}

async function notesWith(projectId: number, issueId: number, marker: string): Promise<number> {
  let count = 0;
  for await (const note of world.admin.notes.listIssueNotes(projectId, issueId))
    if (extractMarkers(note.body).includes(marker)) count++;
  return count;
}

const sorted = (labels: readonly string[]): string[] => [...labels].sort();

const LABEL_ROUTE = 'PUT /projects/:id/issues/:issue_id';
const MERGE_PATH = /\/merge_requests\/\d+\/merge$/;
const NOTES_PATH = /\/issues\/\d+\/notes$/;

describe('label writes', () => {
  it.each([
    {
      name: 'a label a human added meanwhile stays',
      initial: ['ui'],
      rule: { add: ['bug'] },
      human: ['ui', 'docs'],
      final: ['ui', 'docs', 'bug'],
      status: 'done',
    },
    {
      name: 'a label a human removed meanwhile is not written back',
      initial: ['ui', 'triage'],
      rule: { add: ['bug'] },
      human: ['ui'],
      final: ['ui', 'bug'],
      status: 'done',
    },
    {
      name: 'a planned removal applies to the newer set',
      initial: ['ui', 'needs-info'],
      rule: { remove: ['needs-info'] },
      human: ['ui', 'needs-info', 'docs'],
      final: ['ui', 'docs'],
      status: 'done',
    },
    {
      name: 'nothing is written when a human already made the change',
      initial: ['ui'],
      rule: { add: ['bug'] },
      human: ['ui', 'bug'],
      final: ['ui', 'bug'],
      status: 'skipped',
    },
  ])('$name', async ({ initial, rule, human, final, status }) => {
    const project = await world.newProject(`labels-${status}-${initial.length}-${human.length}`);
    const issue = await world.admin.issues.create(project.id, { title: 'Labels', labels: initial });
    const rules = rulesFrom(
      `rules:\n  - name: labeller\n    on: [issue.open]\n    do: [ { label: ${JSON.stringify(rule)} } ]\n`,
    );
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    expect(evaluation.plan).toHaveLength(1);

    await world.admin.issues.update(project.id, issue.id, { labels: human });
    bot.http.stats.reset();
    const report = await executorFor(bot, await openStore()).execute(evaluation, snapshot);

    expect(report.calls.map((call) => call.status)).toEqual([status]);
    expect(sorted((await world.admin.issues.get(project.id, issue.id)).labels)).toEqual(sorted(final));
    expect(bot.http.stats.byRoute.get(LABEL_ROUTE) ?? 0).toBe(status === 'done' ? 1 : 0);
  });
});

describe('comments', () => {
  const rules = rulesFrom(
    `rules:\n  - name: greeter\n    on: [issue.open]\n    do: [ { comment: "Thanks for the report." } ]\n`,
  );

  async function planned(name: string) {
    const project = await world.newProject(name);
    const issue = await world.admin.issues.create(project.id, { title: 'Greet me' });
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    const marker = evaluation.plan[0]?.call.marker;
    if (!marker) throw new Error('no comment planned');
    return { project, issue, bot, snapshot, evaluation, marker };
  }

  it('the same plan executed twice posts one comment', async () => {
    const { project, issue, bot, snapshot, evaluation, marker } = await planned('comment-twice');
    const executor = executorFor(bot, await openStore());
    const first = await executor.execute(evaluation, snapshot);
    const second = await executor.execute(evaluation, snapshot);
    expect([first.calls[0]?.status, second.calls[0]?.status]).toEqual(['done', 'skipped']);
    expect(second.calls[0]?.detail).toBe('this comment is already posted');
    expect(await notesWith(project.id, issue.id, marker)).toBe(1);
  });

  it.each([
    { name: 'executing the same plan again', recover: 'execute' },
    { name: 'the retry sweep taking the action over', recover: 'retry' },
  ])('a crash between the post and its completion, then $name, posts once', async ({ recover }) => {
    const { project, issue, bot, snapshot, evaluation, marker } = await planned(`comment-crash-${recover}`);
    const store = await openStore();
    let crashed = false;
    // The process "dies" right after the post: completing the action in the outbox never happens.
    const crashing = new Proxy(store, {
      get(target, prop) {
        if (prop === 'completeAction' && !crashed)
          return async () => {
            crashed = true;
            throw new Error('simulated crash');
          };
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await expect(executorFor(bot, crashing).execute(evaluation, snapshot)).rejects.toThrow('simulated crash');
    expect(await notesWith(project.id, issue.id, marker)).toBe(1);

    const executor = executorFor(bot, store);
    if (recover === 'execute') {
      const again = await executor.execute(evaluation, snapshot);
      expect(again.calls[0]).toMatchObject({ status: 'skipped', detail: 'this comment is already posted' });
    } else {
      // Not due before its lease runs out: the run that put it might still be at work.
      expect(store.dueActions(Date.now())).toEqual([]);
      const due = store.dueActions(Date.now() + 61_000);
      expect(due).toHaveLength(1);
      expect(await executor.retryAction(due[0]!)).toMatchObject({ status: 'skipped' });
    }
    expect(await notesWith(project.id, issue.id, marker)).toBe(1);
    expect(store.dueActions(Date.now() + 3_600_000)).toEqual([]);
  });

  it('a lost answer to the post is resolved by listing the notes again', async () => {
    const { project, issue, snapshot, evaluation, marker } = await planned('comment-lost-answer');
    const faulty = await proxy();
    faulty.fail({ method: 'POST', path: NOTES_PATH, mode: 'forward-then-502' });
    const store = await openStore();
    const report = await executorFor(world.botClient({ baseUrl: faulty.url }), store).execute(
      evaluation,
      snapshot,
    );
    expect(report.calls[0]).toMatchObject({
      status: 'done',
      detail: expect.stringContaining('re-read found the comment'),
    });
    expect(faulty.forwarded('POST', NOTES_PATH)).toBe(1);
    expect(await notesWith(project.id, issue.id, marker)).toBe(1);
    expect(store.dueActions(Date.now() + 3_600_000)).toEqual([]);
  });
});

describe('merges', () => {
  const green = rulesFrom(`rules:
  - name: merge when green
    on: [merge_request.update]
    if:
      - labels: { any: [automerge] }
      - statuses: { required: [ci/build, ci/test], state: success }
    do: [ merge ]
`);

  async function greenMergeRequest(name: string) {
    const project = await world.newProject(name);
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'success', 'ci/test': 'success' },
    });
    return { project, mr };
  }

  it('merges the head it evaluated', async () => {
    const { project, mr } = await greenMergeRequest('merge-ok');
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, green, 'merge_request', project.id, mr.id);
    expect(evaluation.plan.map((call) => call.call.op)).toEqual(['mergeRequests.merge']);
    const report = await executorFor(bot, await openStore()).execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({ status: 'done', detail: `merged at ${mr.sha.slice(0, 8)}` });
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('merged');
  });

  it('a push between evaluation and execution: not merged, skipped because the head moved', async () => {
    const { project, mr } = await greenMergeRequest('merge-head-moved');
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, green, 'merge_request', project.id, mr.id);
    const newHead = await pushCommit(world.admin, project.id, 'feature', 'late.txt');
    bot.http.stats.reset();
    const report = await executorFor(bot, await openStore()).execute(evaluation, snapshot);
    expect(report.headMoved).toBe(true);
    expect(report.calls[0]).toMatchObject({
      status: 'skipped',
      headMoved: true,
      detail: `head moved: evaluated at ${mr.sha.slice(0, 8)}, now ${newHead.slice(0, 8)}; not merged, re-evaluate`,
    });
    expect(bot.http.stats.byRoute.get('PUT /projects/:id/merge_requests/:merge_request_id/merge') ?? 0).toBe(
      0,
    );
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('opened');
  });

  it('a push in the last instant, after the re-read: the server refuses the pinned sha (409)', async () => {
    const { project, mr } = await greenMergeRequest('merge-409');
    const faulty = await proxy();
    const bot = world.botClient({ baseUrl: faulty.url });
    const { snapshot, evaluation } = await evaluateItem(bot, green, 'merge_request', project.id, mr.id);
    let newHead = '';
    faulty.fail({
      method: 'PUT',
      path: MERGE_PATH,
      before: async () => {
        newHead = await pushCommit(world.admin, project.id, 'feature', 'last-instant.txt');
      },
    });
    const report = await executorFor(bot, await openStore()).execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({ status: 'skipped', headMoved: true });
    expect(report.calls[0]?.detail).toContain(`now ${newHead.slice(0, 8)}`);
    expect(faulty.forwarded('PUT', MERGE_PATH)).toBe(1);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('opened');
  });

  it.each<{ mode: FaultMode; timeoutMs?: number }>([
    { mode: 'forward-then-502' },
    { mode: 'forward-then-reset' },
    { mode: 'forward-then-hang', timeoutMs: 1_500 },
  ])(
    'a merge whose answer is lost ($mode) is re-read, reported done, and never sent twice',
    async ({ mode, timeoutMs }) => {
      const { project, mr } = await greenMergeRequest(`merge-lost-${mode}`);
      const faulty = await proxy();
      const bot = world.botClient({ baseUrl: faulty.url, ...(timeoutMs ? { timeoutMs } : {}) });
      const { snapshot, evaluation } = await evaluateItem(bot, green, 'merge_request', project.id, mr.id);
      faulty.fail({ method: 'PUT', path: MERGE_PATH, mode });
      const store = await openStore();
      const report = await executorFor(bot, store).execute(evaluation, snapshot);
      expect(report.calls[0]).toMatchObject({
        status: 'done',
        detail: expect.stringContaining('the re-read shows it merged'),
      });
      expect(faulty.arrived('PUT', MERGE_PATH)).toBe(1);
      expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('merged');
      expect(store.dueActions(Date.now() + 3_600_000)).toEqual([]);
    },
  );

  it('when even the re-read fails, the merge stays ambiguous and its retry re-reads instead of merging again', async () => {
    const { project, mr } = await greenMergeRequest('merge-ambiguous-retry');
    const faulty = await proxy();
    const bot = world.botClient({ baseUrl: faulty.url, retries: 0 });
    const { snapshot, evaluation } = await evaluateItem(bot, green, 'merge_request', project.id, mr.id);
    // The re-check before merging passes; the merge lands but its answer is lost; the re-read after it fails.
    faulty.fail({ method: 'PUT', path: MERGE_PATH, mode: 'forward-then-502' });
    faulty.fail({ method: 'GET', path: /\/merge_requests\/\d+$/, mode: 'down', skip: 1 });
    const store = await openStore();
    const executor = executorFor(bot, store);
    const report = await executor.execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({ status: 'ambiguous', retryable: true, attempts: 1 });
    expect(faulty.forwarded('PUT', MERGE_PATH)).toBe(1);

    const [due] = store.dueActions(Date.now() + 3_600_000);
    expect(due).toBeDefined();
    expect(await executor.retryAction(due!)).toMatchObject({ status: 'skipped', detail: 'already merged' });
    expect(faulty.arrived('PUT', MERGE_PATH)).toBe(1);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('merged');
    expect(store.dueActions(Date.now() + 3_600_000)).toEqual([]);
  });
});

describe('merge when build succeeds', () => {
  // The server's own merge armed too (`on_server`); the default, the bot's own merge, below.
  const arming = rulesFrom(`rules:
  - name: arm when building
    on: [merge_request.update]
    if:
      - labels: { any: [automerge] }
      - statuses: { required: [ci/build, ci/test], state: pending }
    do: [ { merge_when_build_succeeds: { on_server: true } } ]
  - name: stop auto-merge when blocked
    on: [merge_request.update]
    if: [ { labels: { any: [do-not-merge] } }, { merge_when_build_succeeds: true } ]
    do: [ cancel_merge ]
`);

  it.each([
    { name: 'from the compiled rule', withRules: true },
    { name: 'from the evaluation record when no rule set is given', withRules: false },
  ])('arms on a running build and watches the required statuses ($name)', async ({ withRules }) => {
    const project = await world.newProject(`arm-${withRules}`);
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'running', 'ci/test': 'pending' },
    });
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, arming, 'merge_request', project.id, mr.id);
    const store = await openStore();
    const before = Date.now();
    const report = await executorFor(bot, store).execute(
      evaluation,
      snapshot,
      withRules ? { rules: arming } : {},
    );
    expect(report.calls[0]).toMatchObject({ status: 'done', op: 'mergeRequests.mergeWhenBuildSucceeds' });
    const read = await world.admin.mergeRequests.get(project.id, mr.id);
    expect([read.state, read.merge_when_build_succeeds]).toEqual(['opened', true]);
    expect(store.watched()).toEqual([
      {
        itemKey: `merge_request:${project.id}:${mr.id}`,
        project: project.path,
        mrId: mr.id,
        headSha: mr.sha,
        targetBranch: 'master',
        onServer: true,
        rule: 'arm when building',
        required: ['ci/build', 'ci/test'],
        since: expect.any(Number),
      },
    ]);
    expect(store.watched()[0]!.since).toBeGreaterThanOrEqual(before);
  });

  it('by default arms nothing on the server: the bot watches the head and target it judged, and cancel_merge ends its watch', async () => {
    const own = rulesFrom(`rules:
  - name: arm when building
    on: [merge_request.update]
    if:
      - labels: { any: [automerge] }
      - statuses: { required: [ci/build, ci/test], state: pending }
    do: [ merge_when_build_succeeds ]
  - name: stop auto-merge when blocked
    on: [merge_request.update]
    if: [ { labels: { any: [do-not-merge] } }, { merge_when_build_succeeds: true } ]
    do: [ cancel_merge ]
`);
    const project = await world.newProject('arm-own');
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'running', 'ci/test': 'pending' },
    });
    const bot = world.botClient();
    const store = await openStore();
    const executor = executorFor(bot, store);
    const armed = await evaluateItem(bot, own, 'merge_request', project.id, mr.id);
    const report = await executor.execute(armed.evaluation, armed.snapshot, { rules: own });
    expect(report.calls[0]).toMatchObject({
      status: 'done',
      detail: expect.stringContaining('the bot merges at'),
    });
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).merge_when_build_succeeds).toBe(false);
    expect(store.watched()).toMatchObject([{ headSha: mr.sha, targetBranch: 'master' }]);
    expect(store.watched()[0]).not.toHaveProperty('onServer');
    // Planned again (the watch not seen by this reader): the executor finds it watched.
    const again = await executor.execute(armed.evaluation, armed.snapshot, { rules: own });
    expect(again.calls[0]).toMatchObject({
      status: 'skipped',
      detail: expect.stringContaining('already watched'),
    });

    await world.admin.mergeRequests.update(project.id, mr.id, { labels: ['automerge', 'do-not-merge'] });
    const reader = createSnapshotReader(bot, {
      watching: (itemKey) => store.watched().some((entry) => entry.itemKey === itemKey),
    });
    const snapshot = (await reader.read(
      { type: 'merge_request', projectId: project.id, id: mr.id },
      { kind: 'merge_request', action: 'update', byBot: false },
      own.needs,
    ))!;
    const blocked = evaluate(own, snapshot, { now: Date.now() });
    expect(blocked.plan.map((call) => call.call.op)).toEqual(['mergeRequests.cancelMergeWhenBuildSucceeds']);
    const cancelled = await executor.execute(blocked, snapshot, { rules: own });
    expect(cancelled.calls[0]).toMatchObject({
      status: 'done',
      detail: 'the bot no longer merges it when its build succeeds',
    });
    expect(store.watched()).toEqual([]);
  });

  it('a crash between arming and watching is repaired by running the plan again', async () => {
    const project = await world.newProject('arm-crash');
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'running', 'ci/test': 'running' },
    });
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, arming, 'merge_request', project.id, mr.id);
    const store = await openStore();
    const executor = executorFor(bot, store);
    await executor.execute(evaluation, snapshot, { rules: arming });
    await store.unwatch(`merge_request:${project.id}:${mr.id}`); // the watch write was lost
    const again = await executor.execute(evaluation, snapshot, { rules: arming });
    expect(again.calls[0]).toMatchObject({
      status: 'skipped',
      detail: 'already armed; watching ci/build, ci/test',
    });
    expect(store.watched().map((entry) => entry.headSha)).toEqual([mr.sha]);
  });

  it('cancel_merge cancels the armed merge and drops the watch', async () => {
    const project = await world.newProject('arm-cancel');
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'running', 'ci/test': 'running' },
    });
    const bot = world.botClient();
    const store = await openStore();
    const executor = executorFor(bot, store);
    const armed = await evaluateItem(bot, arming, 'merge_request', project.id, mr.id);
    await executor.execute(armed.evaluation, armed.snapshot, { rules: arming });
    expect(store.watched()).toHaveLength(1);

    await world.admin.mergeRequests.update(project.id, mr.id, { labels: ['automerge', 'do-not-merge'] });
    const blocked = await evaluateItem(bot, arming, 'merge_request', project.id, mr.id);
    expect(blocked.evaluation.plan.map((call) => call.call.op)).toEqual([
      'mergeRequests.cancelMergeWhenBuildSucceeds',
    ]);
    const report = await executor.execute(blocked.evaluation, blocked.snapshot, { rules: arming });
    expect(report.calls[0]).toMatchObject({ status: 'done', detail: 'cancelled merge_when_build_succeeds' });
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).merge_when_build_succeeds).toBe(false);
    expect(store.watched()).toEqual([]);
  });
});

describe('outbox retries', () => {
  it.each([
    {
      name: 'a comment',
      rule: '{ comment: "We are on it." }',
      path: NOTES_PATH,
      method: 'POST',
      check: async (projectId: number, issueId: number) => {
        let posted = 0;
        for await (const note of world.admin.notes.listIssueNotes(projectId, issueId))
          if (note.body.startsWith('We are on it.')) posted++;
        return posted === 1;
      },
    },
    {
      name: 'a label write',
      rule: '{ label: { add: [triaged] } }',
      path: /\/issues\/\d+$/,
      method: 'PUT',
      check: async (projectId: number, issueId: number) =>
        (await world.admin.issues.get(projectId, issueId)).labels.includes('triaged'),
    },
  ])('$name that met a 503 twice completes once on the third try', async ({ rule, path, method, check }) => {
    const project = await world.newProject(`retry-${method}`);
    const issue = await world.admin.issues.create(project.id, { title: 'Retry me' });
    const rules = rulesFrom(`rules:\n  - name: helper\n    on: [issue.open]\n    do: [ ${rule} ]\n`);
    const faulty = await proxy();
    const bot = world.botClient({ baseUrl: faulty.url, retries: 0 });
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    faulty.fail({ method, path, mode: 'down', times: 2 });
    let clock = Date.now();
    const store = await openStore();
    const executor = executorFor(bot, store, { now: () => clock, retry: { baseDelayMs: 1_000 } });

    const first = await executor.execute(evaluation, snapshot);
    expect(first.calls[0]).toMatchObject({ status: 'failed', retryable: true, attempts: 1 });
    expect(store.dueActions(clock)).toEqual([]); // backing off
    clock += 60_000;
    const [due] = store.dueActions(clock);
    expect(due).toMatchObject({ attempts: 1, lastError: expect.stringContaining('503') });
    expect(await executor.retryAction(due!)).toMatchObject({ status: 'failed', attempts: 2 });
    clock += 60_000;
    expect(await executor.retryAction(store.dueActions(clock)[0]!)).toMatchObject({ status: 'done' });

    expect(store.dueActions(clock + 3_600_000)).toEqual([]);
    expect(store.listParked()).toEqual([]);
    expect(faulty.forwarded(method, path)).toBe(1);
    expect(await check(project.id, issue.id)).toBe(true);
  });

  it('an action a previous process leased and died holding is due at once after a restart, and done once', async () => {
    const project = await world.newProject('retry-orphan');
    const issue = await world.admin.issues.create(project.id, { title: 'Crash mid-call' });
    const rules = rulesFrom(
      `rules:\n  - name: helper\n    on: [issue.open]\n    do: [ { comment: "Orphaned." } ]\n`,
    );
    const faulty = await proxy();
    // The previous process: its comment reaches the server, then it "dies" before the answer.
    const previous = world.botClient({ baseUrl: faulty.url, retries: 0, timeoutMs: 60_000 });
    const { snapshot, evaluation } = await evaluateItem(previous, rules, 'issue', project.id, issue.id);
    faulty.fail({ method: 'POST', path: NOTES_PATH, mode: 'forward-then-hang' });
    let clock = Date.now();
    const store = await openStore();
    const dying = executorFor(previous, store, { now: () => clock });
    const abandoned = dying.execute(evaluation, snapshot).catch(() => undefined);
    const postedBy = async () => {
      let count = 0;
      for await (const note of world.admin.notes.listIssueNotes(project.id, issue.id))
        if (note.body.startsWith('Orphaned.')) count++;
      return count;
    };
    await waitFor(async () => ((await postedBy()) === 1 ? true : undefined));
    const [leased] = store.dueActions(clock + 60_000);
    expect(leased).toMatchObject({ attempts: 0 });
    expect(store.dueActions(clock)).toEqual([]); // leased: the retry sweep of that process leaves it alone

    // The restarted process: a new executor, five seconds later, on the same state.
    clock += 5_000;
    const restarted = executorFor(world.botClient(), store, { now: () => clock });
    expect(restarted.dueActions(clock).map((action) => action.id)).toEqual([leased!.id]);
    // The retry finds the comment the dead process posted and completes without a second one.
    expect(await restarted.retryAction(leased!)).toMatchObject({ status: 'skipped' });
    expect(restarted.dueActions(clock + 3_600_000)).toEqual([]);
    expect(await postedBy()).toBe(1);
    // A lease this executor takes itself is not due before it runs out.
    await store.putAction({
      id: 'own-lease',
      itemKey: 'issue:1:1',
      rule: 'r',
      call: {},
      nextTryAt: clock + 60_000,
    });
    expect(restarted.dueActions(clock).map((action) => action.id)).toEqual([]);
    // The dead process's call ends when its connection does; it changes nothing any more.
    proxies = proxies.filter((open) => open !== faulty);
    await faulty.close();
    await abandoned;
    expect(await postedBy()).toBe(1);
  });

  it('an action that keeps failing is parked after maxAttempts with a visible reason', async () => {
    const project = await world.newProject('retry-park');
    const issue = await world.admin.issues.create(project.id, { title: 'Never' });
    const rules = rulesFrom(
      `rules:\n  - name: helper\n    on: [issue.open]\n    do: [ { comment: "Hello" } ]\n`,
    );
    const faulty = await proxy();
    const bot = world.botClient({ baseUrl: faulty.url, retries: 0 });
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    faulty.fail({ method: 'POST', path: NOTES_PATH, mode: 'down', times: 99 });
    const store = await openStore();
    let clock = Date.now();
    const executor = executorFor(bot, store, { now: () => clock, retry: { maxAttempts: 3 } });
    await executor.execute(evaluation, snapshot);
    for (let i = 0; i < 2; i++) {
      clock += 3_600_000;
      await executor.retryAction(store.dueActions(clock)[0]!);
    }
    expect(store.dueActions(clock + 3_600_000)).toEqual([]);
    const parked = store.listParked();
    expect(parked).toHaveLength(1);
    expect(parked[0]?.parked?.reason).toMatch(
      /^gave up after 3 attempts; last error: POST .*notes failed: 503/,
    );
    expect(faulty.arrived('POST', NOTES_PATH)).toBe(3);
  });

  it('a failure no retry can fix is parked at once, with its reason', async () => {
    const project = await world.newProject('park-now');
    const issue = await world.admin.issues.create(project.id, { title: 'Assign me' });
    const rules = rulesFrom(
      `rules:\n  - name: assigner\n    on: [issue.open]\n    do: [ { assign: { to: nobody-here } } ]\n`,
    );
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    const store = await openStore();
    const report = await executorFor(bot, store).execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({
      status: 'failed',
      retryable: false,
      parked: 'no user named @nobody-here on the server',
    });
    expect(store.listParked().map((action) => action.parked?.reason)).toEqual([
      'no user named @nobody-here on the server',
    ]);
  });

  it.each([
    { failures: 1, delay: 22_500 },
    { failures: 2, delay: 45_000 },
    { failures: 3, delay: 90_000 },
    { failures: 20, delay: 1_350_000 },
  ])('backoff after $failures failures is $delay ms at mid jitter', ({ failures, delay }) => {
    expect(backoffMs(failures, { baseDelayMs: 30_000, maxDelayMs: 1_800_000, random: () => 0.5 })).toBe(
      delay,
    );
  });
});

describe('composite calls', () => {
  it('assign resolves the username to an id, and does nothing once it holds', async () => {
    const project = await world.newProject('assign');
    const issue = await world.admin.issues.create(project.id, { title: 'Who?' });
    const alice = await world.admin.users.create({
      username: 'exec-alice',
      name: 'Alice',
      email: 'exec-alice@example.com',
      password: 'secret-password-1',
    });
    const rules = rulesFrom(
      `rules:\n  - name: assigner\n    on: [issue.open]\n    do: [ { assign: { to: exec-alice } } ]\n`,
    );
    const bot = world.botClient();
    const executor = executorFor(bot, await openStore());
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    expect((await executor.execute(evaluation, snapshot)).calls[0]).toMatchObject({ status: 'done' });
    expect((await world.admin.issues.get(project.id, issue.id)).assignee?.id).toBe(alice.id);
    expect((await executor.execute(evaluation, snapshot)).calls[0]).toMatchObject({
      status: 'skipped',
      detail: 'already assigned to @exec-alice',
    });
  });

  it('move resolves the target path to a project id', async () => {
    const source = await world.newProject('move-from');
    const target = await world.newProject('move-to');
    const issue = await world.admin.issues.create(source.id, { title: 'Question', labels: ['question'] });
    const rules = rulesFrom(
      `rules:\n  - name: mover\n    on: [issue.open]\n    do: [ { move: { to: ${target.path} } } ]\n`,
    );
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', source.id, issue.id);
    const report = await executorFor(bot, await openStore()).execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({
      status: 'done',
      detail: expect.stringContaining(`moved to ${target.path}`),
    });
    expect((await world.admin.issues.get(source.id, issue.id)).state).toBe('closed');
    const moved = [];
    for await (const candidate of world.admin.issues.list(target.id)) moved.push(candidate.title);
    expect(moved).toEqual(['Question']);
  });

  it('a status already on the head is not posted again', async () => {
    const project = await world.newProject('status-once');
    const mr = await openMergeRequest(world.admin, project.id, 'feature');
    const rules = rulesFrom(`rules:
  - name: checker
    on: [merge_request.update]
    do: [ { status: { name: hookbot/check, state: success, description: all good } } ]
`);
    const bot = world.botClient();
    const executor = executorFor(bot, await openStore());
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'merge_request', project.id, mr.id);
    const statuses = [
      (await executor.execute(evaluation, snapshot)).calls[0]?.status,
      (await executor.execute(evaluation, snapshot)).calls[0]?.status,
    ];
    expect(statuses).toEqual(['done', 'skipped']);
    const rows = [];
    for await (const status of world.admin.statuses.list(project.id, mr.sha, { all: true }))
      rows.push(status.name);
    expect(rows).toEqual(['hookbot/check']);
  });
});

describe('summary status', () => {
  it('follows a changed blocking reason (the old pending status is finished, the new one posted), then turns success', async () => {
    const project = await world.newProject('summary-reason');
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      statuses: { 'ci/build': 'running', 'ci/test': 'running' },
    });
    const rules = rulesFrom(`rules:
  - name: gate
    on: [merge_request.update]
    summary_status: true
    if: [ { statuses: { required: [ci/build, ci/test], state: success } } ]
    do: [subscribe]
`);
    const bot = world.botClient();
    const executor = executorFor(bot, await openStore());
    const summary = async () => {
      const rows: { status: string; description: string | null }[] = [];
      for await (const status of world.admin.statuses.list(project.id, mr.sha, { all: true }))
        if (status.name === 'hookbot/rules')
          rows.push({ status: status.status, description: status.description ?? null });
      return rows;
    };
    const run = async () => {
      const { snapshot, evaluation } = await evaluateItem(bot, rules, 'merge_request', project.id, mr.id);
      const report = await executor.execute(evaluation, snapshot);
      return report.calls.filter((call) => call.op === 'statuses.create').map((call) => call.status);
    };

    expect(await run()).toEqual(['done']);
    const [first] = await summary();
    expect(first).toMatchObject({
      status: 'pending',
      description: expect.stringContaining('ci/build=running'),
    });

    // One status went green: the reason changes, and the summary says the new one.
    await world.admin.statuses.create(project.id, mr.sha, {
      state: 'success',
      name: 'ci/build',
      ref: 'feature',
    });
    expect(await run()).toEqual(['done']);
    let rows = await summary();
    expect(rows.map((row) => row.status)).toEqual(['canceled', 'pending']);
    expect(rows[0]?.description).toBe(first?.description);
    expect(rows[1]?.description).toContain('ci/build=success');
    expect(rows[1]?.description).toContain('ci/test=running');
    const latest = [];
    for await (const status of world.admin.statuses.list(project.id, mr.sha))
      if (status.name === 'hookbot/rules') latest.push([status.status, status.description]);
    expect(latest).toEqual([['pending', rows[1]?.description]]);
    // The same reason again: nothing posted.
    expect(await run()).toEqual([]);

    await world.admin.statuses.create(project.id, mr.sha, {
      state: 'success',
      name: 'ci/test',
      ref: 'feature',
    });
    expect(await run()).toEqual(['done']);
    rows = await summary();
    expect(rows.map((row) => row.status)).toEqual(['canceled', 'success']);
  });
});

describe('merge requests from forks', () => {
  it("posts the summary status on the fork's head commit, where it is read back: the next evaluation plans nothing", async () => {
    const upstream = await world.newProject('fork-up');
    const fork = await world.admin.projects.fork(upstream.id);
    // The bot may write to the fork (without access the post fails and the action is parked, visibly).
    await world.admin.members.add(fork.id, world.botUser.id, 30);
    await world.admin.branches.create(fork.id, { branch_name: 'feature', ref: 'master' });
    await world.admin.files.create(fork.id, {
      file_path: 'feature.txt',
      branch_name: 'feature',
      content: 'feature\n',
      commit_message: 'Add feature',
    });
    const created = await world.admin.mergeRequests.create(fork.id, {
      source_branch: 'feature',
      target_branch: 'master',
      title: 'From a fork',
      target_project_id: upstream.id,
    });
    const rules = rulesFrom(
      `rules:\n  - name: policy\n    on: [merge_request.open]\n    summary_status: true\n    if: [ { labels: { any: [ready] } } ]\n    do: [subscribe]\n`,
    );
    const bot = world.botClient();
    const first = await evaluateItem(bot, rules, 'merge_request', upstream.id, created.id);
    expect(first.snapshot).toMatchObject({ project: { id: upstream.id }, source_project_id: fork.id });
    const store = await openStore();
    const report = await executorFor(bot, store).execute(first.evaluation, first.snapshot);
    expect(report.calls.map((call) => [call.op, call.status])).toEqual([['statuses.create', 'done']]);
    const sha = (await world.admin.branches.get(fork.id, 'feature')).commit.id;
    const onFork: string[] = [];
    for await (const status of world.admin.statuses.list(fork.id, sha))
      onFork.push(`${status.name}=${status.status}`);
    expect(onFork).toEqual(['hookbot/rules=pending']);
    // Read back from the fork: the same status stands, so nothing is posted again.
    const again = await evaluateItem(bot, rules, 'merge_request', upstream.id, created.id);
    expect(again.evaluation.plan).toEqual([]);
  });
});

describe('dry-run', () => {
  it('describes every call, makes none and leaves the outbox alone', async () => {
    const project = await world.newProject('dry-run');
    const issue = await world.admin.issues.create(project.id, { title: 'It crashes', labels: ['ui'] });
    const rules = rulesFrom(`rules:
  - name: triage
    on: [issue.open]
    do: [ { label: { add: [bug] } }, { comment: "Thanks" }, close ]
`);
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    const store = await openStore();
    bot.http.stats.reset();
    const report = await executorFor(bot, store, { dryRun: true }).execute(evaluation, snapshot);
    expect(bot.http.stats.calls).toBe(0);
    expect(report.dryRun).toBe(true);
    expect(report.calls.map((call) => [call.status, call.op])).toEqual([
      ['dry-run', 'issues.update'],
      ['dry-run', 'notes.createIssueNote'],
      ['dry-run', 'issues.update'],
    ]);
    expect(report.calls[0]?.detail).toBe('would call issues.update labels=[ui, bug]');
    expect(report.counts).toMatchObject({ 'dry-run': 3, done: 0 });
    expect(store.dueActions(Date.now() + 3_600_000)).toEqual([]);
    const after = await world.admin.issues.get(project.id, issue.id);
    expect([after.state, after.labels]).toEqual(['opened', ['ui']]);
  });
});

describe('errors', () => {
  it('never carry the token, in the report or the logs', async () => {
    const project = await world.newProject('no-leak');
    const issue = await world.admin.issues.create(project.id, { title: 'Leak?' });
    const rules = rulesFrom(
      `rules:\n  - name: labeller\n    on: [issue.open]\n    do: [ { label: { add: [x] } } ]\n`,
    );
    const faulty = await proxy();
    const bot = world.botClient({ baseUrl: faulty.url, retries: 0 });
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    faulty.fail({ method: 'GET', path: /\/issues\/\d+$/, mode: 'echo-token' });
    const log = recordingLog();
    const report = await executorFor(bot, await openStore(), { log }).execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({ status: 'failed', retryable: true });
    expect(report.calls[0]?.error).toContain('[REDACTED]');
    const everything = JSON.stringify([report, log.lines]);
    expect(everything).not.toContain(world.botToken);
    expect(log.lines.map((line) => line.level)).toEqual(['warn']);
  });

  it('an ApiError the executor cannot resolve keeps its kind in the report', async () => {
    const project = await world.newProject('gone');
    const issue = await world.admin.issues.create(project.id, { title: 'Soon gone' });
    const rules = rulesFrom(
      `rules:\n  - name: labeller\n    on: [issue.open]\n    do: [ { label: { add: [x] } } ]\n`,
    );
    const bot = world.botClient();
    const { snapshot, evaluation } = await evaluateItem(bot, rules, 'issue', project.id, issue.id);
    await world.admin.issues.remove(project.id, issue.id);
    const report = await executorFor(bot, await openStore()).execute(evaluation, snapshot);
    expect(report.calls[0]).toMatchObject({ status: 'failed', retryable: false, detail: 'not_found (404)' });
    expect(
      new ApiError({ status: 404, method: 'GET', route: '/x', path: '/x', kind: 'not_found' }).retryable,
    ).toBe(false);
  });
});
