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
import { createClient } from '../../../src/api/client.ts';
import { addUser } from '../../../src/sandbox/factories.ts';
import { pushWorkIdle } from '../../../src/sandbox/git-access.ts';
import {
  evaluateItem,
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

  it("the merge watch's merge of an outsider's merge request armed on a label: the gate refuses it on the fresh read", async () => {
    const { project, mr, rules, freshCheck } = await setUp('watch-outsider', { 'ci/test': 'success' });
    // Its author is nobody the members API shows (a fork's owner, say): a label is no proof.
    const outsider = addUser(world.sb.ctx.db, { username: 'fresh-watch-outsider' });
    world.sb.ctx.db.data.mergeRequests.find((one) => one.id === mr.id)!.author_id = outsider.id;
    world.sb.ctx.db.changed();
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
    expect(await freshCheck(`merge_request:${project.id}:${mr.id}`, stored)).toEqual({
      planned: false,
      reason: expect.stringMatching(
        /^its author fresh-watch-outsider has no access to .*, less than developer: a label is no proof/,
      ),
    });
  });

  it("the merge queue's merge of an outsider's merge request replays the member's comment: read again, its author's access read again, no push after it", async () => {
    const project = await world.newProject('replay');
    const mr = await openMergeRequest(world.admin, project.id, 'replay-branch', {
      statuses: { 'ci/test': 'success' },
    });
    const db = world.sb.ctx.db;
    const outsider = addUser(db, { username: 'fresh-replay-outsider' });
    db.data.mergeRequests.find((one) => one.id === mr.id)!.author_id = outsider.id;
    const devToken = 'fresh-replay-dev-token-0123456789';
    const dev = addUser(db, { username: 'fresh-replay-dev', private_token: devToken });
    db.data.groupMembers.push({ group_id: world.group.id, user_id: dev.id, access_level: 30 });
    db.changed();
    const devClient = createClient({ baseUrl: world.sb.url, token: devToken });
    const note = await devClient.notes.createMergeRequestNote(project.id, mr.id, '/hookbot merge');
    // A rule that only a comment runs: the queue's merge must be judged under that comment.
    const rules = rulesFrom(`rules:
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge' } } ]
    do: [ { queue: { statuses: [ci/test] } } ]
`);
    const reader = createSnapshotReader(world.botClient(), { bot: { id: world.botUser.id } });
    const freshCheck = createFreshCheck({ reader, rules: { forProject: () => rules } });
    const itemKey = `merge_request:${project.id}:${mr.id}`;
    const queueMerge = (sha: string, trigger: StoredCall['trigger']): StoredCall => ({
      v: 1,
      project: project.path,
      required: ['ci/test'],
      origin: 'merge_queue',
      ...(trigger ? { trigger } : {}),
      planned: {
        action: 'queue',
        rule: 'queue on command',
        reason: 'merge queue',
        call: { op: 'mergeRequests.merge', args: { project: project.id, merge_request_id: mr.id, sha } },
      },
    });
    const comment = { kind: 'note', noteId: note.id, byBot: false } as const;
    expect(await freshCheck(itemKey, queueMerge(mr.sha, comment))).toMatchObject({ planned: true });
    // Under the event the queue used to give its merges, the command rule does not even apply.
    expect(await freshCheck(itemKey, queueMerge(mr.sha, UPDATE))).toMatchObject({
      planned: false,
      reason: expect.stringMatching(/^queue on command no longer applies/),
    });

    // The member lost her developer access: her comment approves nothing any more.
    const membership = db.data.groupMembers.find((one) => one.user_id === dev.id)!;
    membership.access_level = 20;
    db.changed();
    expect(await freshCheck(itemKey, queueMerge(mr.sha, comment))).toEqual({
      planned: false,
      reason: expect.stringContaining('@fresh-replay-dev, who commented, has reporter (20) access'),
    });
    membership.access_level = 30;
    db.changed();

    // A push after the comment (a new head, green too): the comment is about an older head.
    const pushed = await pushCommit(world.admin, project.id, 'replay-branch', 'later.txt');
    await pushWorkIdle(world.sb.ctx);
    await postStatuses(world.admin, project.id, pushed, 'replay-branch', { 'ci/test': 'success' });
    expect(await freshCheck(itemKey, queueMerge(pushed, comment))).toEqual({
      planned: false,
      reason: expect.stringContaining(
        'a push to its source branch came after the comment of @fresh-replay-dev: the comment approves an older head',
      ),
    });
    // A new comment, after the push, approves the new head.
    const again = await devClient.notes.createMergeRequestNote(project.id, mr.id, '/hookbot merge');
    expect(
      await freshCheck(itemKey, queueMerge(pushed, { kind: 'note', noteId: again.id, byBot: false })),
    ).toMatchObject({ planned: true });
  });

  it('reads item keys back into addresses', () => {
    expect(itemAddressOf('merge_request:3:17')).toEqual({ type: 'merge_request', projectId: 3, id: 17 });
    expect(itemAddressOf('issue:1:2')).toEqual({ type: 'issue', projectId: 1, id: 2 });
    expect(itemAddressOf('nonsense')).toBeUndefined();
  });
});
