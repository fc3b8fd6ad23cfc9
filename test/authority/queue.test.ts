/**
 * The authority table's merge queue rows (docs/security.md "The table": entering the serial queue
 * and its merge, the push that brings a source branch up to its target, the queue's removal
 * comments), driven as every role against the sandbox over HTTP and git, with the bot running as in
 * production (helpers/authority-world.ts) and its merge_queue sweep run by the test until the queue
 * stands still. Each role has projects of her own (one queue each), so the cells run side by side.
 * table.ts holds the expected outcomes, table.test.ts ties them to the doc.
 *
 * - Entering the queue: the role opens a merge request labelled `automerge` from her own branch
 *   (reporters, guests and non-members cannot push one: `cannot`, the 403 asserted). The fork
 *   owner's cell is `only`: a developer's label does not queue her merge request, a developer's
 *   comment `/hookbot merge` does, and it is merged; and a merge request of hers approved by a
 *   comment, then pushed to (a new head in her fork), is not merged, nor is its new head on master.
 * - The push: the project's master moves after the branch was made (a commit of the sandbox's
 *   root), so the queue must bring the branch up before it tests it. The rule says `authors:
 *   anyone`, so that the gate does not stop the admin's and the fork owner's merge requests before
 *   the push rule is reached: the cell is the push rule's. `yes`: the bot pushed a merge commit to
 *   her source branch (the push event is the bot's) and the merge request was merged; `no`: the
 *   branch was not pushed and the merge request left the queue.
 * - Removal comments: no role's act (`n/a`); the row's check is the bot's own promise, one comment
 *   per removal: the admin's and the fork owner's merge requests of the push row each got exactly
 *   one, the merged ones none. (A trouble comment needs three failed steps over five minutes of the
 *   clock: test/e2e/merge-queue-push-rule.test.ts has it.)
 */
import { afterAll, beforeAll, describe, expect } from 'vitest';
import {
  refusedPush,
  startAuthorityWorld,
  type AuthorityWorld,
  type MergeRequestView,
  type Project,
  type Role,
  ROLES,
} from '../helpers/authority-world.ts';
import { driveRows, type Outcome } from './table.ts';

const PREFIX = 'aque';
const AUTHORS = ['admin', 'master', 'developer', 'fork owner'] as const;
type Author = (typeof AUTHORS)[number];
const slug = (role: Role) => role.replace(' ', '-');

const QUEUE = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test] }
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge\\b' } } ]
    do:
      - queue: { statuses: [ci/test] }
`;
const DEQUEUE = `${QUEUE}
  - name: dequeue on command
    on: [note.created]
    for: merge_requests
    if: [ { note: { matches: '^/hookbot dequeue\\b' } } ]
    do:
      - dequeue
`;
const PUSH = `
rules:
  - name: queue anyone's
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], authors: anyone }
`;

describe('the authority table: merge queue rows, every role', () => {
  let w: AuthorityWorld;
  beforeAll(async () => {
    const rules: Record<string, string> = {};
    for (const role of AUTHORS) {
      rules[`queue-${slug(role)}`] = QUEUE;
      rules[`push-${slug(role)}`] = PUSH;
    }
    rules['late-fork-owner'] = QUEUE;
    for (const role of ROLES) rules[`dequeue-${slug(role)}`] = DEQUEUE;
    rules['controls'] = QUEUE;
    w = await startAuthorityWorld({ prefix: PREFIX, rules });
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  const isAuthor = (role: Role): role is Author => (AUTHORS as readonly string[]).includes(role);
  /** Reporters, guests and non-members try to push a branch for their merge request. */
  async function refused(role: Role): Promise<'cannot'> {
    const project = await w.project('queue-developer');
    const push = await refusedPush(w, role, project.url, `refs/heads/${slug(role)}-topic`);
    if (push.ok || !/403/.test(push.error)) throw new Error(`${role}'s push: ${push.error || 'taken'}`);
    return 'cannot';
  }
  async function open(
    role: Author,
    project: Project,
    branch: string,
    labels: string[],
  ): Promise<MergeRequestView> {
    const { mr, push, refusal } = await w.openMergeRequest(role, project, branch, { labels });
    if (!mr) throw new Error(`${role} could not open her merge request: ${push.error || refusal}`);
    await w.settle();
    return mr;
  }
  async function asDeveloper(
    project: Project,
    mr: MergeRequestView,
    what: 'label' | 'command',
  ): Promise<void> {
    const res =
      what === 'label'
        ? await w.people.developer.as('PUT', `/projects/${project.id}/merge_requests/${mr.id}`, {
            body: { labels: 'automerge' },
          })
        : await w.people.developer.as('POST', `/projects/${project.id}/merge_requests/${mr.id}/notes`, {
            body: { body: '/hookbot merge' },
          });
    if (res.status !== 200 && res.status !== 201) throw new Error(`the developer's ${what}: ${res.status}`);
    await w.settle();
  }
  const state = async (project: Project, mr: MergeRequestView) => (await w.mr(project, mr.id)).state;

  /** The push row's scenario of a role (memoized: the removal comments' check reads it too). */
  const pushes = new Map<Author, Promise<{ project: Project; mr: MergeRequestView; pushed: boolean }>>();
  function pushScenario(role: Author) {
    let scenario = pushes.get(role);
    if (!scenario) {
      scenario = (async () => {
        const project = await w.project(`push-${slug(role)}`);
        const mr = await open(
          role,
          project,
          `behind-${slug(role)}`,
          role === 'fork owner' ? [] : ['automerge'],
        );
        // master moves on: the branch is behind.
        const moved = await w.root('POST', `/projects/${project.id}/repository/files`, {
          body: {
            file_path: 'moved.txt',
            branch_name: 'master',
            content: 'moved\n',
            commit_message: 'master moves',
          },
        });
        if (moved.status !== 201) throw new Error(`master did not move: ${moved.status}`);
        if (role === 'fork owner') await asDeveloper(project, mr, 'label');
        await w.quiesceQueue();
        const pushed = (await w.pushedTo(mr.source_project_id, mr.source_branch)).some(
          (p) => p.by === w.bot.id,
        );
        return { project, mr, pushed };
      })();
      pushes.set(role, scenario);
    }
    return scenario;
  }

  driveRows('queue', {
    'queue: enter the serial queue, and its merge': {
      async run(role): Promise<Outcome | string> {
        if (!isAuthor(role)) return refused(role);
        const project = await w.project(`queue-${slug(role)}`);
        if (role !== 'fork owner') {
          const mr = await open(role, project, `queued-${slug(role)}`, ['automerge']);
          await w.quiesceQueue();
          if ((await state(project, mr)) === 'merged') return 'yes';
          return (await w.mr(project, mr.id)).labels.includes('automerge') ? 'no' : 'no automerge label';
        }
        const mr = await open(role, project, 'queued-fork', []);
        await asDeveloper(project, mr, 'label');
        await w.quiesceQueue();
        const onLabel = await state(project, mr);
        await asDeveloper(project, mr, 'command');
        await w.quiesceQueue();
        const onCommand = await state(project, mr);
        // Approved at one head, pushed after: nothing of that head is merged.
        const other = await w.project('late-fork-owner');
        const late = await open(role, other, 'queued-late', []);
        await asDeveloper(other, late, 'command');
        const pushed = await w.pushOnto(role, other, 'queued-late', { 'unreviewed.txt': 'unreviewed\n' });
        if (!pushed.ok) throw new Error(`her push to her fork: ${pushed.error}`);
        await w.settle();
        await w.quiesceQueue();
        const lateState = await state(other, late);
        const landed = (await w.history(other.id, 'master')).some((commit) => commit.id === pushed.sha);
        if (onLabel === 'opened' && onCommand === 'merged' && lateState === 'opened' && !landed)
          return 'only';
        return JSON.stringify({ onLabel, onCommand, lateState, landed });
      },
    },
    'queue: the push that brings a source branch up to its target': {
      async run(role) {
        if (!isAuthor(role)) return refused(role);
        const { project, mr, pushed } = await pushScenario(role);
        const merged = (await state(project, mr)) === 'merged';
        if (pushed) return merged ? 'yes' : 'pushed, not merged';
        return merged ? 'merged without a push' : 'no';
      },
    },
    "dequeue on a member's command (`/hookbot dequeue`)": {
      async run(role) {
        // A developer's merge request, queued on its label; its queue paused so that it stays there.
        const project = await w.project(`dequeue-${slug(role)}`);
        await w.runtime.store.setQueueControl({
          project: project.path,
          projectId: project.id,
          targetBranch: 'master',
          queue: 'default',
          paused: { by: 'test', reason: 'hold the queue', at: Date.now() },
        });
        const mr = await open('developer', project, `dequeued-${slug(role)}`, ['automerge']);
        const entry = () =>
          w.runtime.store.queued().find((e) => e.projectId === project.id && e.mrId === mr.id);
        if (!entry() || entry()!.left) return 'not queued';
        const res = await w.people[role].as('POST', `/projects/${project.id}/merge_requests/${mr.id}/notes`, {
          body: { body: '/hookbot dequeue' },
        });
        if (res.status !== 201) return `her comment: ${res.status}`;
        await w.settle();
        return entry()?.left ? 'yes' : 'no';
      },
    },
    "an operator's queue controls (pause, resume, remove, front)": {
      async check() {
        // The operator's, on the ops port (this bot listens on loopback without status_auth): a body
        // a browser form could send is refused, a JSON one lands.
        const project = await w.project('controls');
        const url = `${w.runtime.bot.url}/queues/pause`;
        const form = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `project=${project.path}&target_branch=master&reason=forged`,
        });
        expect(form.status).toBe(415);
        expect(w.runtime.store.queueControls().some((c) => c.projectId === project.id)).toBe(false);
        const json = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            project: project.path,
            target_branch: 'master',
            reason: 'freeze',
            by: 'ops',
          }),
        });
        expect(json.status).toBe(200);
        expect(w.runtime.store.queueControls().find((c) => c.projectId === project.id)?.paused?.by).toBe(
          'ops',
        );
      },
    },
    "the queue's removal and trouble comments": {
      async check() {
        for (const role of AUTHORS) {
          const { project, mr } = await pushScenario(role);
          const removals = (await w.botNotes(project, 'merge_requests', mr.id)).filter((body) =>
            body.startsWith('Removed from the default merge queue'),
          );
          expect({ role, removals: removals.length }).toEqual({
            role,
            removals: role === 'admin' || role === 'fork owner' ? 1 : 0,
          });
        }
      },
    },
  });
});
