/**
 * Adversarial, issue 37's controls of the merge queue (docs/merge-queue.md#steering-the-queue): a
 * non-member, a reporter and a fork owner try to use the members' `/hookbot dequeue` (the `dequeue`
 * action) to take out a merge request that is not theirs, against the bot running as `hookbot serve`
 * composes it (helpers/authority-world.ts: the sandbox delivering project hooks over HTTP, the bot's
 * client over HTTP with its own token). Nobody but a developer or more may take a merge request out
 * by a comment; what these roles have is the hook's secret, which travels in clear: they can send the
 * bot any delivery, and so replay a Note Hook of a developer's earlier `/hookbot dequeue` (the bot
 * reads that note by its id, and finds it is a developer's, as it is).
 *
 * Each project's queue is paused (an operator's release freeze, set in the store), so a queued merge
 * request stays in its queue and the test reads the queue's entry: `left` set is taken out.
 *
 * Holes found (each test failed before its fix):
 * - a developer's `/hookbot dequeue`, spent (it took the merge request out), took it out again at
 *   every replay of its delivery, after the merge request came back by a push or by a member's new
 *   queue command;
 * - a developer's `/hookbot dequeue` written before a push took out the head pushed after it.
 * - back at the same head by its label rule matching anew (the label taken off and put back, which
 *   leaves no note the bot reads), it was taken out again by a replay of the spent command.
 * Closed where the `dequeue` action plans (a push, a close and reopen or a retarget after the comment
 * voids it, as for the commands that approve: rules/item/pushed-since-note.ts) and where the call is
 * made (a comment older than the one that queued the merge request, or written before the merge
 * request's stay in the queue began, takes nothing out: merge-queue-dequeue.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startAuthorityWorld,
  type AuthorityWorld,
  type MergeRequestView,
  type Person,
  type Project,
} from '../helpers/authority-world.ts';

const PREFIX = 'qcatk';
/** The hook's secret as the sandbox sends it (helpers/authority-world.ts): read off the wire. */
const SNIFFED_SECRET = 'authority-hook-secret';

const RULES = `
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
  - name: dequeue on command
    on: [note.created]
    for: merge_requests
    if: [ { note: { matches: '^/hookbot dequeue\\b' } } ]
    do:
      - dequeue
`;

const PROJECTS = ['after-push', 'after-approval', 'before-push', 'after-relabel'] as const;

describe('adversarial: the merge queue controls (members’ commands replayed)', { timeout: 180_000 }, () => {
  let w: AuthorityWorld;
  beforeAll(async () => {
    const rules: Record<string, string> = {};
    for (const name of PROJECTS) rules[name] = RULES;
    w = await startAuthorityWorld({ prefix: PREFIX, rules });
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  /** A project whose default queue for master an operator paused: what enters stays there. */
  async function pausedProject(name: (typeof PROJECTS)[number]): Promise<Project> {
    const project = await w.project(name);
    await w.runtime.store.setQueueControl({
      project: project.path,
      projectId: project.id,
      targetBranch: 'master',
      queue: 'default',
      paused: { by: 'test', reason: 'hold the queue', at: Date.now() },
    });
    return project;
  }

  /** The developer's merge request, queued on its label. */
  async function queuedMergeRequest(project: Project, branch: string): Promise<MergeRequestView> {
    const { mr, push, refusal } = await w.openMergeRequest('developer', project, branch, {
      labels: ['automerge'],
    });
    if (!mr) throw new Error(`the developer's merge request: ${push.error || refusal}`);
    await w.settle();
    expect(entry(project, mr)?.left).toBeUndefined();
    expect(entry(project, mr)).toBeDefined();
    return mr;
  }

  const entry = (project: Project, mr: MergeRequestView) =>
    w.runtime.store.queued().find((e) => e.projectId === project.id && e.mrId === mr.id);
  const queued = (project: Project, mr: MergeRequestView) => {
    const held = entry(project, mr);
    return held !== undefined && held.left === undefined;
  };

  async function comment(who: Person, project: Project, mr: MergeRequestView, body: string): Promise<number> {
    const res = await who.as('POST', `/projects/${project.id}/merge_requests/${mr.id}/notes`, {
      body: { body },
    });
    if (res.status !== 201) throw new Error(`${who.role}'s comment: ${res.status} ${res.text}`);
    await w.settle();
    return (res.body as { id: number }).id;
  }

  async function label(project: Project, mr: MergeRequestView, labels: string): Promise<void> {
    const res = await w.people.developer.as('PUT', `/projects/${project.id}/merge_requests/${mr.id}`, {
      body: { labels },
    });
    if (res.status !== 200) throw new Error(`the developer's label: ${res.status} ${res.text}`);
    await w.settle();
  }

  /**
   * The attacker sends the bot, with the sniffed secret, the Note Hook the sandbox delivered for
   * `noteId`, as it was: the bot reads the note by its id and finds the developer's command.
   */
  async function replay(noteId: number): Promise<void> {
    const original = w.sb.ctx.hooks
      .recent()
      .find(
        (d) =>
          d.event === 'Note Hook' &&
          (d.payload.object_attributes as { id?: number } | undefined)?.id === noteId,
      );
    if (!original) throw new Error(`no delivery of note ${noteId} to replay`);
    const res = await fetch(w.runtime.bot.hookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gitlab-event': 'Note Hook',
        'x-gitlab-token': SNIFFED_SECRET,
      },
      body: JSON.stringify(original.payload),
    });
    expect(res.status).toBeLessThan(300);
    await w.settle();
  }

  it('a spent /hookbot dequeue replayed after a push brought the merge request back takes nothing out', async () => {
    const project = await pausedProject('after-push');
    const mr = await queuedMergeRequest(project, 'topic-push');
    const note = await comment(w.people.master, project, mr, '/hookbot dequeue');
    expect(entry(project, mr)?.left?.reason).toMatch(/dequeue command/);
    // The developer pushes: a new head enters the queue again (its label rule still matches).
    const pushed = await w.pushOnto('developer', project, 'topic-push', { 'more.txt': 'more\n' });
    expect(pushed.ok).toBe(true);
    await w.settle();
    expect(queued(project, mr)).toBe(true);
    await replay(note);
    expect(queued(project, mr)).toBe(true);
    // Not a deaf bot: the master's new command takes it out.
    await comment(w.people.master, project, mr, '/hookbot dequeue');
    expect(queued(project, mr)).toBe(false);
  });

  it("a spent /hookbot dequeue replayed after a member's new queue command takes nothing out", async () => {
    const project = await pausedProject('after-approval');
    const mr = await queuedMergeRequest(project, 'topic-approval');
    const note = await comment(w.people.master, project, mr, '/hookbot dequeue');
    expect(queued(project, mr)).toBe(false);
    await comment(w.people.developer, project, mr, '/hookbot merge');
    expect(queued(project, mr)).toBe(true);
    await replay(note);
    expect(queued(project, mr)).toBe(true);
  });

  it('a spent /hookbot dequeue replayed after the label was taken off and put back takes nothing out', async () => {
    const project = await pausedProject('after-relabel');
    const mr = await queuedMergeRequest(project, 'topic-relabel');
    const note = await comment(w.people.master, project, mr, '/hookbot dequeue');
    expect(queued(project, mr)).toBe(false);
    // The label off and on: the rule matches anew and the same head enters the queue again.
    await label(project, mr, '');
    await label(project, mr, 'automerge');
    expect(queued(project, mr)).toBe(true);
    await replay(note);
    expect(queued(project, mr)).toBe(true);
    // Not a deaf bot: the master's new command takes it out.
    await comment(w.people.master, project, mr, '/hookbot dequeue');
    expect(queued(project, mr)).toBe(false);
  });

  it('a /hookbot dequeue written before a push takes out nothing of the head pushed after it', async () => {
    const project = await pausedProject('before-push');
    // Not queued yet: the developer's command takes nothing out (nothing to take).
    const { mr } = await w.openMergeRequest('developer', project, 'topic-before', {});
    if (!mr) throw new Error('the merge request was not opened');
    await w.settle();
    const note = await comment(w.people.developer, project, mr, '/hookbot dequeue');
    expect(entry(project, mr)).toBeUndefined();
    // A push, then the label: the new head is queued.
    const pushed = await w.pushOnto('developer', project, 'topic-before', { 'later.txt': 'later\n' });
    expect(pushed.ok).toBe(true);
    await w.settle();
    await label(project, mr, 'automerge');
    expect(queued(project, mr)).toBe(true);
    await replay(note);
    expect(queued(project, mr)).toBe(true);
  });
});
