/**
 * The item processor end to end against the sandbox: read fresh, evaluate, execute, record a
 * decision that explains itself. Merge safety across the whole path (a missing required status
 * never merges; a head that moves mid-run is evaluated again), cheap loop prevention, transient
 * errors handed back to the pipeline, and dry-run.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../../../src/api/client.ts';
import { ApiError } from '../../../src/api/errors.ts';
import { isTransient } from '../../../src/start-bot.ts';
import type { ItemProcessor } from '../../../src/receiver/pipeline.ts';
import type { CompiledRuleSet } from '../../../src/rules/engine/compile.ts';
import { createExecutor } from '../../../src/rules/executor/executor.ts';
import { createItemProcessor, type Decision } from '../../../src/rules/item/process-item.ts';
import { createSnapshotReader, type SnapshotReader } from '../../../src/rules/item/read-snapshot.ts';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { createMemoryStore } from '../../../src/state/memory-store.ts';
import type { StateStore } from '../../../src/state/store.ts';
import { startFaultProxy, type FaultProxy } from '../../helpers/fault-proxy.ts';
import {
  makeExecWorld,
  openMergeRequest,
  postStatuses,
  pushCommit,
  type ExecWorld,
} from '../../helpers/exec-world.ts';
import { useSandbox } from '../../helpers/sandbox.ts';
import { rulesFrom } from '../support.ts';

const ctx = useSandbox();
let world: ExecWorld;
let proxies: FaultProxy[] = [];

beforeAll(() => {
  world = makeExecWorld(ctx().sb, 'proc');
});

afterEach(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  proxies = [];
});

const OPENED: Trigger = { kind: 'issue', action: 'open', byBot: false };
const MR_UPDATED: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
const MERGE_ROUTE = 'PUT /projects/:id/merge_requests/:merge_request_id/merge';

const TRIAGE = `rules:
  - name: triage bug reports
    on: [issue.open]
    if:
      - title: { matches: '(?i)\\b(bug|crash)\\b' }
      - labels: { none: [bug] }
    do:
      - label: { add: [bug, needs-triage] }
      - comment: "Thanks @{{ author.username }}, a maintainer will look at this soon."
`;

const MERGE_WHEN_GREEN = `rules:
  - name: merge when green
    on: [merge_request.open, merge_request.update, status.changed]
    if:
      - state: opened
      - work_in_progress: false
      - labels: { any: [automerge] }
      - statuses: { required: [ci/build, ci/test], state: success }
    do: [ { merge: { remove_source_branch: true } } ]
`;

async function setUp(
  client: Client,
  yaml: string,
  options: { dryRun?: boolean; reader?: SnapshotReader } = {},
): Promise<{ store: StateStore; rules: CompiledRuleSet; process: ItemProcessor }> {
  const store = createMemoryStore();
  await store.open();
  const rules = rulesFrom(yaml);
  const executor = createExecutor({ client, store, dryRun: options.dryRun ?? false });
  const process = createItemProcessor({
    client,
    store,
    rules: { forProject: () => rules },
    executor,
    ...(options.reader ? { reader: options.reader } : {}),
  });
  return { store, rules, process };
}

function decisionOf(store: StateStore, key: string): Decision {
  const record = store.latestDecision(key);
  if (!record) throw new Error(`no decision for ${key}`);
  return record.decision as Decision;
}

describe('item processor', () => {
  it('records a decision that explains itself: conditions, verdicts, plan and outcomes', async () => {
    const project = await world.newProject('explained');
    const issue = await world.admin.issues.create(project.id, { title: 'Crash on start', labels: ['ui'] });
    const bot = world.botClient();
    const { store, process } = await setUp(bot, TRIAGE);
    await process({ type: 'issue', projectId: project.id, id: issue.id }, [OPENED]);

    const key = `issue:${project.id}:${issue.id}`;
    const decision = decisionOf(store, key);
    expect(decision.itemKey).toBe(key);
    expect(decision.evaluation.rules[0]).toMatchObject({
      rule: 'triage bug reports',
      applies: true,
      matched: true,
      conditions: [
        { ok: true, value: 'Crash on start' },
        { ok: true, value: ['ui'] },
      ],
    });
    expect(decision.execution.calls.map((call) => [call.op, call.status])).toEqual([
      ['issues.update', 'done'],
      ['notes.createIssueNote', 'done'],
    ]);
    expect(decision.text).toContain('✓ triage bug reports');
    expect(decision.text).toContain('1. done: issues.update labels=[ui, bug, needs-triage]');
    expect(decision.text).toContain('2. done: notes.createIssueNote');
    const after = await world.admin.issues.get(project.id, issue.id);
    expect([...after.labels].sort()).toEqual(['bug', 'needs-triage', 'ui']);
  });

  it('a missing required status never merges; once it passes, the merge happens', async () => {
    const project = await world.newProject('missing-status');
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'success' },
    });
    const bot = world.botClient();
    const { store, process } = await setUp(bot, MERGE_WHEN_GREEN);
    const item = { type: 'merge_request' as const, projectId: project.id, id: mr.id };
    const key = `merge_request:${project.id}:${mr.id}`;

    await process(item, [MR_UPDATED]);
    expect(bot.http.stats.byRoute.get(MERGE_ROUTE) ?? 0).toBe(0);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('opened');
    const held = decisionOf(store, key);
    expect(held.evaluation.rules[0]?.matched).toBe(false);
    expect(held.evaluation.rules[0]?.conditions.at(-1)).toMatchObject({
      ok: false,
      value: { 'ci/build': 'success', 'ci/test': 'missing' },
    });
    expect(held.text).toContain('execution: nothing to do');

    await postStatuses(world.admin, project.id, mr.sha, 'feature', { 'ci/test': 'success' });
    await process(item, [{ kind: 'status', byBot: false }]);
    expect(bot.http.stats.byRoute.get(MERGE_ROUTE)).toBe(1);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('merged');
    expect(decisionOf(store, key).execution.calls).toMatchObject([
      { op: 'mergeRequests.merge', status: 'done' },
    ]);
  });

  it('a push between reading and executing: the merge is skipped, the item evaluated again, nothing merged', async () => {
    const project = await world.newProject('moved-head');
    const mr = await openMergeRequest(world.admin, project.id, 'feature', {
      labels: ['automerge'],
      statuses: { 'ci/build': 'success', 'ci/test': 'success' },
    });
    const bot = world.botClient();
    const inner = createSnapshotReader(bot);
    let pushed = '';
    // The push lands right after the first read: the evaluation sees the old, green head.
    const reader: SnapshotReader = {
      ...inner,
      async read(item, trigger, needs) {
        const snapshot = await inner.read(item, trigger, needs);
        if (!pushed) pushed = await pushCommit(world.admin, project.id, 'feature', 'racing.txt');
        return snapshot;
      },
    };
    const { store, process } = await setUp(bot, MERGE_WHEN_GREEN, { reader });
    await process({ type: 'merge_request', projectId: project.id, id: mr.id }, [MR_UPDATED]);

    expect(bot.http.stats.byRoute.get(MERGE_ROUTE) ?? 0).toBe(0);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('opened');
    const decision = decisionOf(store, `merge_request:${project.id}:${mr.id}`);
    expect(decision.superseded).toMatchObject({
      reason: 'a merge was skipped because the head moved',
      item: { sha: mr.sha },
      execution: {
        headMoved: true,
        calls: [{ op: 'mergeRequests.merge', status: 'skipped', headMoved: true }],
      },
    });
    // The new head has no statuses yet: the second evaluation holds the merge back.
    expect(decision.evaluation.item.sha).toBe(pushed);
    expect(decision.evaluation.rules[0]?.matched).toBe(false);
    expect(decision.execution.calls).toEqual([]);
    expect(decision.text).toContain('evaluated again: a merge was skipped because the head moved');
  });

  it.each([
    {
      name: 'no rule allows bot events: dropped before the item is read',
      allowBot: false,
      reads: 0,
      decided: false,
    },
    // Two reads: the snapshot, then the executor's re-read right before it writes the labels.
    { name: 'a rule allows bot events: read and evaluated', allowBot: true, reads: 2, decided: true },
  ])('an event the bot caused, when $name', async ({ allowBot, reads, decided }) => {
    const project = await world.newProject(`by-bot-${allowBot}`);
    const issue = await world.admin.issues.create(project.id, { title: 'A bug' });
    const bot = world.botClient();
    const yaml = `rules:\n  - name: echo\n    on: [note.created]\n    allow_bot: ${allowBot}\n    do: [ { label: { add: [seen] } } ]\n`;
    const { store, process } = await setUp(bot, yaml);
    const note = await bot.notes.createIssueNote(project.id, issue.id, 'Thanks!');
    bot.http.stats.reset();
    await process({ type: 'issue', projectId: project.id, id: issue.id }, [
      { kind: 'note', noteId: note.id, byBot: true },
    ]);
    expect(bot.http.stats.byRoute.get('GET /projects/:id/issues/:issue_id') ?? 0).toBe(reads);
    expect(store.latestDecision(`issue:${project.id}:${issue.id}`) !== undefined).toBe(decided);
  });

  it('a transient error while reading is thrown, for the pipeline to retry', async () => {
    const project = await world.newProject('transient');
    const issue = await world.admin.issues.create(project.id, { title: 'A crash' });
    const faulty = await startFaultProxy(ctx().sb.url);
    proxies.push(faulty);
    const bot = world.botClient({ baseUrl: faulty.url, retries: 0 });
    const { store, process } = await setUp(bot, TRIAGE);
    faulty.fail({ method: 'GET', path: /\/issues\/\d+$/, mode: 'down' });
    const error = await process({ type: 'issue', projectId: project.id, id: issue.id }, [OPENED]).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
    expect(isTransient(error)).toBe(true);
    expect(store.latestDecision(`issue:${project.id}:${issue.id}`)).toBeUndefined();
  });

  it('in dry-run, only reads are made and the decision says nothing was called', async () => {
    const project = await world.newProject('dry');
    const issue = await world.admin.issues.create(project.id, { title: 'Bug: it crashes', labels: ['ui'] });
    const bot = world.botClient();
    const { store, process } = await setUp(bot, TRIAGE, { dryRun: true });
    bot.http.stats.reset();
    await process({ type: 'issue', projectId: project.id, id: issue.id }, [OPENED]);
    const methods = new Set([...bot.http.stats.byRoute.keys()].map((route) => route.split(' ')[0]));
    expect([...methods]).toEqual(['GET']);
    const decision = decisionOf(store, `issue:${project.id}:${issue.id}`);
    expect(decision.dryRun).toBe(true);
    expect(decision.execution.counts['dry-run']).toBe(2);
    expect(decision.text).toContain('execution (dry run: no call made):');
    expect((await world.admin.issues.get(project.id, issue.id)).labels).toEqual(['ui']);
  });

  it('an item that is gone is skipped without a decision', async () => {
    const project = await world.newProject('gone-item');
    const issue = await world.admin.issues.create(project.id, { title: 'Bug' });
    await world.admin.issues.remove(project.id, issue.id);
    const bot = world.botClient();
    const { store, process } = await setUp(bot, TRIAGE);
    await process({ type: 'issue', projectId: project.id, id: issue.id }, [OPENED]);
    expect(store.latestDecision(`issue:${project.id}:${issue.id}`)).toBeUndefined();
  });

  it('each trigger is evaluated on its own fresh read: the second sees what the first did', async () => {
    const project = await world.newProject('two-triggers');
    const issue = await world.admin.issues.create(project.id, { title: 'Crash when saving' });
    const bot = world.botClient();
    const { store, process } = await setUp(
      bot,
      TRIAGE.replace('on: [issue.open]', 'on: [issue.open, note.created]'),
    );
    const bump = await world.admin.notes.createIssueNote(project.id, issue.id, 'bump');
    await process({ type: 'issue', projectId: project.id, id: issue.id }, [
      OPENED,
      { kind: 'note', noteId: bump.id, byBot: false },
    ]);
    const decision = decisionOf(store, `issue:${project.id}:${issue.id}`);
    expect(decision.evaluation.event).toBe('note.created');
    // The labels the first run added make the rule's `labels: { none: [bug] }` fail the second time.
    expect(decision.evaluation.rules[0]?.matched).toBe(false);
    expect(decision.execution.calls).toEqual([]);
    let comments = 0;
    for await (const note of world.admin.notes.listIssueNotes(project.id, issue.id))
      if (note.body.startsWith('Thanks @')) comments++;
    expect(comments).toBe(1);
  });
});
