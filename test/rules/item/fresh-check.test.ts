/**
 * The fresh check before a merge, an arming or a cancel, against the sandbox over HTTP: the call is
 * made only while a fresh evaluation of the item, with the rules in force now, still plans it;
 * otherwise it is withdrawn with the reason, and nothing is sent.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createExecutor } from '../../../src/rules/executor/executor.ts';
import { createFreshCheck, itemAddressOf } from '../../../src/rules/item/fresh-check.ts';
import { createSnapshotReader } from '../../../src/rules/item/read-snapshot.ts';
import type { StoredCall } from '../../../src/rules/executor/types.ts';
import { createMemoryStore } from '../../../src/state/memory-store.ts';
import { evaluateItem, makeExecWorld, openMergeRequest, type ExecWorld } from '../../helpers/exec-world.ts';
import { useSandbox } from '../../helpers/sandbox.ts';
import { rulesFrom } from '../support.ts';

const ctx = useSandbox();
let world: ExecWorld;

beforeAll(() => {
  world = makeExecWorld(ctx().sb, 'fresh');
});

const MERGE_RULES = `rules:
  - name: automerge
    on: [merge_request.update]
    if:
      - state: opened
      - labels: { any: [automerge], none: [do-not-merge] }
      - statuses: { required: [ci/test], state: success }
    do: [merge]
  - name: arm
    on: [merge_request.update]
    if:
      - state: opened
      - labels: { any: [automerge], none: [do-not-merge] }
      - statuses: { required: [ci/test], state: pending }
    do: [merge_when_build_succeeds]
`;

const UPDATE = { kind: 'merge_request', action: 'update', byBot: false } as const;

async function setUp(name: string, statuses: Record<string, 'pending' | 'success'>) {
  const project = await world.newProject(name);
  const mr = await openMergeRequest(world.admin, project.id, `${name}-branch`, {
    labels: ['automerge'],
    statuses,
  });
  const rules = rulesFrom(MERGE_RULES);
  const client = world.botClient();
  const store = createMemoryStore();
  await store.open();
  const reader = createSnapshotReader(client, { bot: { id: world.botUser.id } });
  const freshCheck = createFreshCheck({ reader, rules: { forProject: () => rules } });
  const executor = createExecutor({ client, store, freshCheck, random: () => 0.5 });
  return { project, mr, rules, client, store, executor, freshCheck };
}

describe('the fresh check before merges', () => {
  it('a label removed between the evaluation and the merge call: withdrawn, not merged', async () => {
    const { project, mr, rules, client, store, executor } = await setUp('label-gone', {
      'ci/test': 'success',
    });
    const { snapshot, evaluation } = await evaluateItem(
      client,
      rules,
      'merge_request',
      project.id,
      mr.id,
      UPDATE,
    );
    expect(evaluation.plan.map((call) => call.call.op)).toEqual(['mergeRequests.merge']);
    await world.admin.mergeRequests.update(project.id, mr.id, { labels: ['automerge', 'do-not-merge'] });

    const report = await executor.execute(evaluation, snapshot, { rules });
    expect(report.calls).toMatchObject([
      {
        op: 'mergeRequests.merge',
        status: 'withdrawn',
        detail:
          'withdrawn: automerge no longer matches (labels include any of [automerge] and none of [do-not-merge] seen [automerge, do-not-merge])',
      },
    ]);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('opened');
    expect(store.stats().outbox).toBe(0);
  });

  it('nothing changed: the merge goes ahead on the evaluated head', async () => {
    const { project, mr, rules, client, executor } = await setUp('unchanged', { 'ci/test': 'success' });
    const { snapshot, evaluation } = await evaluateItem(
      client,
      rules,
      'merge_request',
      project.id,
      mr.id,
      UPDATE,
    );
    const report = await executor.execute(evaluation, snapshot, { rules });
    expect(report.calls).toMatchObject([{ op: 'mergeRequests.merge', status: 'done' }]);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).state).toBe('merged');
  });

  it('arming is withdrawn when the fresh read shows a required status failed', async () => {
    const { project, mr, rules, client, executor } = await setUp('arm-failed', { 'ci/test': 'pending' });
    const { snapshot, evaluation } = await evaluateItem(
      client,
      rules,
      'merge_request',
      project.id,
      mr.id,
      UPDATE,
    );
    expect(evaluation.plan.map((call) => call.call.op)).toEqual(['mergeRequests.mergeWhenBuildSucceeds']);
    await world.admin.statuses.create(project.id, mr.sha, { state: 'failed', name: 'ci/test', ref: 'x' });
    const report = await executor.execute(evaluation, snapshot, { rules });
    expect(report.calls[0]).toMatchObject({ status: 'withdrawn' });
    expect(report.calls[0]?.detail).toMatch(/^withdrawn: arm no longer matches \(statuses ci\/test/);
    expect((await world.admin.mergeRequests.get(project.id, mr.id)).merge_when_build_succeeds).toBe(false);
  });

  it("the merge watch's merge: the arming rule's conditions but the pending statuses must still hold", async () => {
    const { project, mr, rules, freshCheck } = await setUp('watch', { 'ci/test': 'success' });
    const itemKey = `merge_request:${project.id}:${mr.id}`;
    const stored: StoredCall = {
      v: 1,
      project: project.path,
      required: ['ci/test'],
      origin: 'merge_watch',
      trigger: UPDATE,
      planned: {
        action: 'merge',
        rule: 'arm',
        reason: 'merge watch',
        call: {
          op: 'mergeRequests.merge',
          args: { project: project.id, merge_request_id: mr.id, sha: mr.sha },
        },
      },
    };
    expect(rules.rules.some((rule) => rule.name === 'arm')).toBe(true);
    // The statuses passed, so the arming rule's `state: pending` no longer holds: that is the point.
    // The verdict carries the read it was made on: the merge is made on those facts, read no later.
    expect(await freshCheck(itemKey, stored)).toMatchObject({
      planned: true,
      snapshot: { id: mr.id, sha: mr.sha, labels: ['automerge'], state: 'opened' },
    });
    await world.admin.mergeRequests.update(project.id, mr.id, { labels: [] });
    expect(await freshCheck(itemKey, stored)).toEqual({
      planned: false,
      reason: 'arm no longer matches (labels include any of [automerge] and none of [do-not-merge] seen [])',
    });
    // Another head than the one armed: never.
    await world.admin.mergeRequests.update(project.id, mr.id, { labels: ['automerge'] });
    const otherHead: StoredCall = {
      ...stored,
      planned: {
        ...stored.planned,
        call: {
          op: 'mergeRequests.merge',
          args: { project: project.id, merge_request_id: mr.id, sha: '0'.repeat(40) },
        },
      },
    };
    expect(await freshCheck(itemKey, otherHead)).toMatchObject({
      planned: false,
      reason: expect.stringMatching(/^the head moved/),
    });
  });

  it('reads item keys back into addresses', () => {
    expect(itemAddressOf('merge_request:3:17')).toEqual({ type: 'merge_request', projectId: 3, id: 17 });
    expect(itemAddressOf('issue:1:2')).toEqual({ type: 'issue', projectId: 1, id: 2 });
    expect(itemAddressOf('nonsense')).toBeUndefined();
  });
});
