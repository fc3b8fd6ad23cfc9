/**
 * The merge watch against the sandbox, with real git branches and commit statuses: a merge request
 * armed by a rule is merged by the watch once its required statuses succeed, and never before:
 * not while one is pending or missing, not on a head that a new commit replaced (that one is
 * evaluated again instead), and not when it was closed meanwhile.
 */
import { describe, expect, it } from 'vitest';
import type { MergeRequest } from '../../src/api/merge-requests.ts';
import { itemKeyOf } from '../../src/rules/executor/ids.ts';
import { createItemProcessor } from '../../src/rules/item/process-item.ts';
import { runMergeWatch, type MergeWatchReport } from '../../src/scheduler/sweeps/merge-watch.ts';
import { quietLog } from '../../src/scheduler/types.ts';
import { createClient } from '../../src/api/client.ts';
import { createExecutor } from '../../src/rules/executor/executor.ts';
import { createFreshCheck } from '../../src/rules/item/fresh-check.ts';
import { createSnapshotReader } from '../../src/rules/item/read-snapshot.ts';
import { addUser } from '../../src/sandbox/factories.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { makeWorld, wire, type World } from './world.ts';

const sandbox = useSandbox();

const ARM_RULE = `
rules:
  - name: automerge
    on: [merge_request.open, merge_request.update, status.changed]
    if:
      - state: opened
      - labels: { any: [automerge] }
      - statuses: { required: [ci/build, ci/test], state: pending }
    do: [ merge_when_build_succeeds ]
`;

interface Armed {
  mr: MergeRequest;
  sha: string;
  itemKey: string;
}

async function head(world: World, branch: string): Promise<string> {
  return (await world.admin.branches.get(world.project.id, branch)).commit.id;
}

async function post(
  world: World,
  sha: string,
  name: string,
  state: 'pending' | 'running' | 'success' | 'failed',
) {
  await world.admin.statuses.create(world.project.id, sha, { state, name, ref: 'feature' });
}

/**
 * A merge request from `feature`, its build running (ci/build, ci/test and a `coverage` status no
 * rule requires, which keeps the server's own merge-when-build-succeeds from merging), evaluated
 * by the engine: the rule arms it and the executor puts it on the watch list.
 */
async function armedMergeRequest(world: World): Promise<Armed> {
  await world.admin.branches.create(world.project.id, { branch_name: 'feature', ref: 'master' });
  await world.admin.files.create(world.project.id, {
    file_path: 'feature.txt',
    branch_name: 'feature',
    content: 'one\n',
    commit_message: 'Add a feature',
  });
  const mr = await world.admin.mergeRequests.create(world.project.id, {
    source_branch: 'feature',
    target_branch: 'master',
    title: 'A feature',
    labels: ['automerge'],
  });
  const sha = await head(world, 'feature');
  for (const name of ['ci/build', 'ci/test', 'coverage']) await post(world, sha, name, 'running');
  const process = createItemProcessor({
    client: world.client,
    store: world.store,
    rules: { forProject: (p) => world.rules.byProject(p) },
    executor: world.executor,
  });
  await process({ type: 'merge_request', projectId: world.project.id, id: mr.id }, [
    { kind: 'merge_request', action: 'update', byBot: false },
  ]);
  const itemKey = itemKeyOf('merge_request', world.project.id, mr.id);
  return { mr, sha, itemKey };
}

const stateOf = async (world: World, mr: MergeRequest): Promise<string> =>
  (await world.admin.mergeRequests.get(world.project.id, mr.id)).state;

const watchOnce = async (world: World): Promise<MergeWatchReport> =>
  (await world.sweeps.run('merge_watch')) as MergeWatchReport;

describe('merge watch', () => {
  it('merges once every required status succeeded, and not one sweep before', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'watch1', rules: ARM_RULE, repository: true });
    const { mr, sha, itemKey } = await armedMergeRequest(world);
    expect(world.store.watched()).toMatchObject([
      { itemKey, project: world.path, mrId: mr.id, headSha: sha, required: ['ci/build', 'ci/test'] },
    ]);

    const running = await watchOnce(world);
    expect(running.items).toMatchObject([
      { outcome: 'waiting', statuses: { 'ci/build': 'running', 'ci/test': 'running' } },
    ]);

    await post(world, sha, 'ci/build', 'success');
    const half = await watchOnce(world);
    expect(half.items).toMatchObject([
      { outcome: 'waiting', statuses: { 'ci/build': 'passed', 'ci/test': 'running' } },
    ]);
    expect(await stateOf(world, mr)).toBe('opened');

    await post(world, sha, 'ci/test', 'success');
    const green = await watchOnce(world);
    expect(green.items).toMatchObject([
      { outcome: 'merged', call: { status: 'done', op: 'mergeRequests.merge' } },
    ]);
    expect(await stateOf(world, mr)).toBe('merged');
    expect(world.store.watched()).toEqual([]);
    expect(world.store.stats().outbox).toBe(0);

    // Never twice: nothing is watched any more.
    expect((await watchOnce(world)).watched).toBe(0);
  });

  it('merges for a rule that arms only while nothing is armed (`merge_when_build_succeeds: false`, as rules/default.yml writes it): the arming is judged as it was', async () => {
    const guarded = ARM_RULE.replace(
      '- state: opened',
      '- state: opened\n      - merge_when_build_succeeds: false',
    );
    // The running bot's wiring: the fresh check before the merge, over a reader that sees the watch.
    const world = await makeWorld(sandbox().sb, {
      prefix: 'watch1b',
      rules: guarded,
      repository: true,
      freshCheck: true,
    });
    const { mr, sha } = await armedMergeRequest(world);
    expect(world.store.watched()).toHaveLength(1);
    await post(world, sha, 'ci/build', 'success');
    await post(world, sha, 'ci/test', 'success');
    const green = await watchOnce(world);
    expect(green.items).toMatchObject([{ outcome: 'merged' }]);
    expect(await stateOf(world, mr)).toBe('merged');
  });

  it('costs two calls per watched merge request while it waits: the merge request and its head statuses', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'watch2', rules: ARM_RULE, repository: true });
    await armedMergeRequest(world);
    const before = world.client.http.stats.calls;
    const byRouteBefore = new Map(world.client.http.stats.byRoute);

    await watchOnce(world);

    expect(world.client.http.stats.calls - before).toBe(2);
    const delta = (route: string) =>
      (world.client.http.stats.byRoute.get(route) ?? 0) - (byRouteBefore.get(route) ?? 0);
    expect(delta('GET /projects/:id/merge_requests/:merge_request_id')).toBe(1);
    expect(delta('GET /projects/:id/repository/commits/:sha/statuses')).toBe(1);
  });

  it('never merges while a required status is missing, even when every status posted passed', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'watch3', rules: ARM_RULE, repository: true });
    const { mr, sha, itemKey } = await armedMergeRequest(world);
    // A watch that also requires ci/deploy, which nobody ever posts.
    await world.store.watch({
      itemKey,
      project: world.path,
      mrId: mr.id,
      headSha: sha,
      rule: 'automerge',
      required: ['ci/build', 'ci/deploy'],
      since: Date.now(),
    });
    await post(world, sha, 'ci/build', 'success');

    const report = await watchOnce(world);

    expect(report.items).toMatchObject([
      { outcome: 'waiting', statuses: { 'ci/build': 'passed', 'ci/deploy': 'missing' } },
    ]);
    expect(report.items[0]?.detail).toContain('ci/deploy missing');
    expect(await stateOf(world, mr)).toBe('opened');
  });

  it('a new commit after arming: not merged on the old head, unwatched and evaluated again', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'watch4', rules: ARM_RULE, repository: true });
    const { mr, sha: armedAt, itemKey } = await armedMergeRequest(world);
    await world.admin.files.create(world.project.id, {
      file_path: 'more.txt',
      branch_name: 'feature',
      content: 'two\n',
      commit_message: 'More',
    });
    const newHead = await head(world, 'feature');
    // The old head's build finishes green: it says nothing about the new commit.
    await post(world, armedAt, 'ci/build', 'success');
    await post(world, armedAt, 'ci/test', 'success');

    const report = await watchOnce(world);

    expect(report.items).toMatchObject([{ outcome: 'reevaluated' }]);
    expect(report.items[0]?.detail).toContain(`now ${newHead.slice(0, 8)}`);
    expect(await stateOf(world, mr)).toBe('opened');
    expect(world.store.watched()).toEqual([]);
    // Evaluated again on the new head: no status there yet, so nothing is armed on it.
    const decision = world.store.latestDecision(itemKey)?.decision as {
      evaluation: { item: { sha: string } };
    };
    expect(decision.evaluation.item.sha).toBe(newHead);
  });

  it('keeps watching the old head when the evaluation of the new one fails, so the next run retries it', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'watch7', rules: ARM_RULE, repository: true });
    const { sha: armedAt, itemKey } = await armedMergeRequest(world);
    await world.admin.files.create(world.project.id, {
      file_path: 'more.txt',
      branch_name: 'feature',
      content: 'two\n',
      commit_message: 'More',
    });

    const report = await runMergeWatch(
      {
        client: world.client,
        store: world.store,
        executor: world.executor,
        processItem: async () => {
          throw new Error('503 Service Unavailable');
        },
        now: Date.now,
        log: quietLog,
      },
      {},
    );

    expect(report.items).toMatchObject([{ outcome: 'error', detail: '503 Service Unavailable' }]);
    expect(world.store.watched()).toMatchObject([{ itemKey, headSha: armedAt }]);
  });

  it("keeps a merge request closed while armed watched, without merging it; reopened at another head, the server's merge is cancelled first", async () => {
    const onServer = ARM_RULE.replace(
      'do: [ merge_when_build_succeeds ]',
      'do: [ { merge_when_build_succeeds: { on_server: true } } ]',
    );
    const world = await makeWorld(sandbox().sb, { prefix: 'watch5', rules: onServer, repository: true });
    const { mr, sha } = await armedMergeRequest(world);
    await world.admin.mergeRequests.close(world.project.id, mr.id);
    await post(world, sha, 'ci/build', 'success');
    await post(world, sha, 'ci/test', 'success');

    const report = await watchOnce(world);

    // The server keeps its arming across a close (and a push while closed does not disarm it).
    expect(report.items).toMatchObject([
      { outcome: 'waiting', detail: expect.stringContaining('closed while armed') },
    ]);
    expect(await stateOf(world, mr)).toBe('closed');
    expect(world.store.watched()).toHaveLength(1);
    // A push while closed, then the reopen: the merge the bot armed at `sha` is cancelled.
    const moved = await world.admin.files.update(world.project.id, {
      file_path: 'feature.txt',
      branch_name: 'feature',
      content: 'moved while closed\n',
      commit_message: 'while closed',
    });
    expect(moved).toBeDefined();
    await world.sb.ctx.hooks.idle();
    await world.admin.mergeRequests.reopen(world.project.id, mr.id);
    expect((await world.admin.mergeRequests.get(world.project.id, mr.id)).merge_when_build_succeeds).toBe(
      true,
    );
    const after = await watchOnce(world);
    expect(after.items).toMatchObject([
      { outcome: 'reevaluated', detail: expect.stringContaining('cancelled') },
    ]);
    const now = await world.admin.mergeRequests.get(world.project.id, mr.id);
    expect(now.merge_when_build_succeeds).toBe(false);
    expect(now.state).not.toBe('merged');
  });

  it("armed on a developer's comment for an outsider's merge request: the watch's merge replays that comment", async () => {
    const rules = `
rules:
  - name: arm on command
    on: [note.created]
    if:
      - state: opened
      - note: { matches: '^/hookbot merge' }
      - statuses: { required: [ci/build, ci/test], state: pending }
    do: [ merge_when_build_succeeds ]
`;
    const world = await makeWorld(sandbox().sb, { prefix: 'watch8', rules, repository: true });
    const db = world.sb.ctx.db;
    await world.admin.branches.create(world.project.id, { branch_name: 'feature', ref: 'master' });
    await world.admin.files.create(world.project.id, {
      file_path: 'feature.txt',
      branch_name: 'feature',
      content: 'one\n',
      commit_message: 'Add a feature',
    });
    const mr = await world.admin.mergeRequests.create(world.project.id, {
      source_branch: 'feature',
      target_branch: 'master',
      title: 'A feature',
    });
    // Its author is nobody the members API shows; a developer of the group comments the command.
    const outsider = addUser(db, { username: 'watch8-outsider' });
    db.data.mergeRequests.find((one) => one.id === mr.id)!.author_id = outsider.id;
    const token = 'watch8-dev-token-0123456789';
    const dev = addUser(db, { username: 'watch8-dev', private_token: token });
    db.data.groupMembers.push({ group_id: world.project.namespace_id, user_id: dev.id, access_level: 30 });
    db.changed();
    const sha = await head(world, 'feature');
    for (const name of ['ci/build', 'ci/test', 'coverage']) await post(world, sha, name, 'running');
    const devClient = createClient({ baseUrl: world.sb.url, token });
    const note = await devClient.notes.createMergeRequestNote(world.project.id, mr.id, '/hookbot merge');
    // The executor asks the fresh check before merging, as in production.
    const rulesOf = { forProject: (p: string) => world.rules.byProject(p) };
    const reader = createSnapshotReader(world.client, { bot: { id: world.bot.id } });
    const executor = createExecutor({
      client: world.client,
      store: world.store,
      freshCheck: createFreshCheck({ reader, rules: rulesOf }),
    });
    const process = createItemProcessor({
      client: world.client,
      store: world.store,
      rules: rulesOf,
      executor,
      reader,
    });
    await process({ type: 'merge_request', projectId: world.project.id, id: mr.id }, [
      { kind: 'note', noteId: note.id, byBot: false },
    ]);
    expect(world.store.watched()).toMatchObject([
      { headSha: sha, trigger: { kind: 'note', noteId: note.id, byBot: false } },
    ]);

    await post(world, sha, 'ci/build', 'success');
    await post(world, sha, 'ci/test', 'success');
    const report = await runMergeWatch(
      {
        client: world.client,
        store: world.store,
        executor,
        processItem: process,
        now: Date.now,
        log: quietLog,
      },
      {},
    );
    // Judged under the comment, read again: under another event the command rule would not apply.
    expect(report.items).toMatchObject([{ outcome: 'merged' }]);
    expect(await stateOf(world, mr)).toBe('merged');
  });

  it('in a dry run says it would merge, and merges nothing', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'watch6', rules: ARM_RULE, repository: true });
    const { mr, sha } = await armedMergeRequest(world);
    await post(world, sha, 'ci/build', 'success');
    await post(world, sha, 'ci/test', 'success');

    const report = (await wire(world, { dryRun: true }).sweeps.run('merge_watch')) as MergeWatchReport;

    expect(report.items).toMatchObject([{ outcome: 'would-merge' }]);
    expect(await stateOf(world, mr)).toBe('opened');
    expect(world.store.watched()).toHaveLength(1);
  });
});
