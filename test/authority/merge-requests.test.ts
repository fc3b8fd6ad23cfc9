/**
 * The authority table's merge request rows (docs/security.md "The table": status, assign, merge,
 * merge on a member's command, merge when build succeeds, its cancel, the merge API's
 * `remove_source_branch`), driven as every role against the sandbox over HTTP and git, with the bot
 * running as in production (helpers/authority-world.ts). Each role has a public project of her
 * own with a protected `master`, holding every row's rule, each keyed to its own label, command or
 * title; every cell has merge requests of its own, so the roles run side by side. (One project for
 * all would have several cells merge into one master at once, where the sandbox answers a merge
 * whose merge status a concurrent merge made stale 405 `Branch cannot be merged`.) table.ts holds the expected outcomes, table.test.ts ties them to the doc.
 *
 * The act: the role pushes a branch over git with her password and opens a merge request from it
 * with her token (the fork owner from her fork, whose CI is the CI's user). Reporters, guests and
 * non-members cannot push (403 over git): `cannot`, and the refusal is asserted. Rows about what the
 * bot does when a label is set on an outsider's merge request (merge, merge when build succeeds) have
 * a developer set it with her own token (the fork owner's own label is dropped by 8.x): `no` is then
 * the bot's gate, not the server's filter. Rows whose cells are the commenter's (merge on a member's
 * command) have each role comment on a merge request of the fork owner's and on a developer's; the
 * rule is written as rules/default.yml writes it (`actor_access: developer`): without it, the gate
 * asks a commenter's access only on a merge request whose author lacks developer access
 * (docs/rules.md, "Writing a command"; test/e2e/merge-queue-outsiders.test.ts tests that gate). The
 * fork owner's `remove_source_branch` cell merges on a developer's command (`/hookbot ship`).
 * Builds on branches named `held-*` post `pending` and never finish (merge when build succeeds needs
 * a pending head); the test posts their success as the CI's user.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import {
  ROLES,
  startAuthorityWorld,
  type AuthorityWorld,
  type MergeRequestView,
  type Project,
  type Role,
} from '../helpers/authority-world.ts';
import { driveRows, type Outcome } from './table.ts';

const PREFIX = 'amr';
const GREEN = `statuses: { required: [ci/test], state: success }`;
const RULES = `
rules:
  - name: changelog status
    on: [merge_request.open]
    for: merge_requests
    if:
      - title: { matches: '^Status:' }
    do:
      - status: { name: hookbot/changelog, state: success, description: changelog checked }
  - name: review
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - state: opened
      - labels: { any: [review] }
    do:
      - assign: { to: ${PREFIX}-lead }
  - name: merge when green
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - state: opened
      - labels: { any: [automerge] }
      - ${GREEN}
    do: [merge]
  - name: merge on command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot merge\\b' }
      - actor_access: developer
      - state: opened
      - ${GREEN}
    do: [merge]
  - name: arm on label
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - state: opened
      - labels: { any: [mwbs] }
      - merge_when_build_succeeds: false
      - statuses: { required: [ci/test], state: pending }
    do: [merge_when_build_succeeds]
  - name: hold
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - labels: { any: [hold] }
      - merge_when_build_succeeds: true
    do: [cancel_merge]
  - name: ship
    on: [merge_request.open, merge_request.update, status.changed]
    for: merge_requests
    if:
      - state: opened
      - labels: { any: [ship] }
      - ${GREEN}
    do:
      - merge: { remove_source_branch: true }
  - name: ship on command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot ship\\b' }
      - state: opened
      - ${GREEN}
    do:
      - merge: { remove_source_branch: true }
`;

const slug = (role: Role) => role.replace(' ', '-');

describe('the authority table: merge request rows, every role', () => {
  let w: AuthorityWorld;
  /** Each cell's project: one per role, so that no two cells merge into one master at once. */
  const projects = {} as Record<Role, Project>;

  beforeAll(async () => {
    w = await startAuthorityWorld({
      prefix: PREFIX,
      rules: Object.fromEntries(ROLES.map((role) => [`web-${slug(role)}`, RULES])),
      held: (branch) => branch.startsWith('held-'),
    });
    for (const role of ROLES) projects[role] = await w.project(`web-${slug(role)}`);
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  /**
   * `role`'s merge request from a new branch into the project of `cell` (the fork owner's from her
   * fork); `cannot` when the server refused her push (a 403, asserted), after everything it set off
   * settled.
   */
  async function opened(
    role: Role,
    cell: Role,
    branch: string,
    options: { title?: string; labels?: string[] } = {},
  ): Promise<MergeRequestView | 'cannot'> {
    const { push, mr, refusal } = await w.openMergeRequest(role, projects[cell], branch, options);
    if (!push.ok) {
      if (!/403/.test(push.error)) throw new Error(`${role}'s push failed otherwise: ${push.error}`);
      return 'cannot';
    }
    if (!mr) throw new Error(`${role} could not open a merge request: ${refusal}`);
    await w.settle();
    return mr;
  }
  const path = (mr: MergeRequestView) => `/projects/${mr.project_id}/merge_requests/${mr.id}`;
  const read = async (mr: MergeRequestView) => (await w.root('GET', path(mr))).body as MergeRequestView;
  /** A member's label on someone else's merge request (the bot cannot tell who set a label). */
  async function labelAs(role: Role, mr: MergeRequestView, labels: string): Promise<number> {
    const res = await w.people[role].as('PUT', path(mr), { body: { labels } });
    await w.settle();
    return res.status;
  }
  async function comment(role: Role, mr: MergeRequestView, body: string): Promise<void> {
    const res = await w.people[role].as('POST', `${path(mr)}/notes`, { body: { body } });
    if (res.status !== 201) throw new Error(`${role} could not comment: ${res.status}`);
    await w.settle();
  }
  const green = async (mr: MergeRequestView) =>
    (await w.statuses(mr.source_project_id, mr.sha)).some(
      (s) => s.name === 'ci/test' && s.status === 'success',
    );
  /** The CI's result of a held build. */
  async function succeed(mr: MergeRequestView): Promise<void> {
    const res = await w.people.ci.as('POST', `/projects/${mr.source_project_id}/statuses/${mr.sha}`, {
      body: { state: 'success', name: 'ci/test', ref: mr.source_branch },
    });
    if (res.status !== 201) throw new Error(`the CI could not post: ${res.status} ${res.text}`);
    await w.settle();
  }
  /** The fork owner's merge request into the cell's project, labelled by a developer where `labels` says. */
  async function outsiders(cell: Role, branch: string, options: { title?: string; labels?: string } = {}) {
    const mr = await opened('fork owner', cell, branch, options.title ? { title: options.title } : {});
    if (mr === 'cannot') throw new Error('the fork owner could not open her merge request');
    if (options.labels && (await labelAs('developer', mr, options.labels)) !== 200)
      throw new Error('the developer could not label it');
    return read(mr);
  }
  /** `no` when the merge request is open, its label set and its head green; what was seen otherwise. */
  const heldBack = async (mr: MergeRequestView, label: string): Promise<string> => {
    const now = await read(mr);
    if (now.state !== 'opened') return now.state;
    if (!now.labels.includes(label)) return `no ${label} label`;
    return (await green(now)) ? 'no' : 'not green';
  };

  driveRows('merge-requests', {
    "status (`hookbot/changelog` on a merge request's head)": {
      async run(role) {
        const mr = await opened(role, role, `status-${slug(role)}`, { title: `Status: ${role}` });
        if (mr === 'cannot') return mr;
        const posted = (await w.statuses(mr.source_project_id, mr.sha)).some(
          (s) => s.name === 'hookbot/changelog',
        );
        return posted ? 'yes' : 'no';
      },
    },
    'assign (a merge request labelled `review` goes to `lead`)': {
      async run(role) {
        const mr = await opened(role, role, `assign-${slug(role)}`, { labels: ['review'] });
        if (mr === 'cannot') return mr;
        const now = await read(mr);
        if (now.assignee?.username === w.people.lead.username) return 'yes';
        return now.labels.includes('review') ? 'labelled, not assigned' : 'no';
      },
    },
    'merge (labelled `automerge`, `ci/test` green)': {
      async run(role): Promise<Outcome | string> {
        if (role === 'fork owner')
          return heldBack(await outsiders(role, 'merge-fork', { labels: 'automerge' }), 'automerge');
        const mr = await opened(role, role, `merge-${slug(role)}`, { labels: ['automerge'] });
        if (mr === 'cannot') return mr;
        return (await read(mr)).state === 'merged' ? 'yes' : heldBack(mr, 'automerge');
      },
    },
    "merge on a member's command (`/hookbot merge`)": {
      async run(role) {
        // Her comment on an outsider's merge request, and on a developer's.
        const outsider = await outsiders(role, `command-${slug(role)}`);
        if (!(await green(outsider))) return 'not green';
        await comment(role, outsider, '/hookbot merge');
        const onOutsider = (await read(outsider)).state;
        if (role === 'fork owner') {
          if (onOutsider === 'merged') return 'yes';
          // Hers does nothing on her own merge request; a developer's comment on the same head merges it.
          await comment('developer', outsider, '/hookbot merge');
          return (await read(outsider)).state === 'merged' ? 'no' : "not merged on a developer's comment";
        }
        const member = await opened('developer', role, `command-dev-${slug(role)}`);
        if (member === 'cannot' || !(await green(member)))
          return "the developer's merge request is not green";
        await comment(role, member, '/hookbot merge');
        const onMember = (await read(member)).state;
        if (onOutsider === 'merged' && onMember === 'merged') return 'yes';
        if (onOutsider === 'opened' && onMember === 'opened') return 'no';
        return JSON.stringify({ onOutsider, onMember });
      },
    },
    'merge when build succeeds (armed on a label)': {
      async run(role) {
        const mr =
          role === 'fork owner'
            ? await outsiders(role, 'held-arm-fork', { labels: 'mwbs' })
            : await opened(role, role, `held-arm-${slug(role)}`, { labels: ['mwbs'] });
        if (mr === 'cannot') return mr;
        // The bot's own merge when the build succeeds: its watch, no server merge armed (on_server).
        if ((await read(mr)).merge_when_build_succeeds) return 'the server armed';
        const armed = w.runtime.store.watched().some((entry) => entry.mrId === mr.id);
        if (!armed) return (await read(mr)).labels.includes('mwbs') ? 'no' : 'no mwbs label';
        await succeed(mr);
        await w.sweepWatch();
        return (await read(mr)).state === 'merged' ? 'yes' : 'armed, not merged';
      },
    },
    'cancel merge when build succeeds (labelled `hold`)': {
      async run(role) {
        // Someone else's merge request (a master's, or the fork owner's own), armed by the master
        // into protected master, which only she may cancel through the API.
        const mr =
          role === 'fork owner'
            ? await outsiders(role, 'held-hold-fork')
            : await opened('master', role, `held-hold-${slug(role)}`);
        if (mr === 'cannot') throw new Error('the master could not open a merge request');
        const armed = await w.people.master.as('PUT', `${path(mr)}/merge`, {
          body: { merge_when_build_succeeds: true },
        });
        if (armed.status !== 200 || !(await read(mr)).merge_when_build_succeeds)
          throw new Error(`not armed: ${armed.status} ${armed.text}`);
        const status = await labelAs(role, mr, 'hold');
        if (status !== 200) return 'cannot';
        const now = await read(mr);
        if (!now.merge_when_build_succeeds) return 'yes';
        return now.labels.includes('hold') ? 'labelled, still armed' : 'no';
      },
    },
    "merge API's `remove_source_branch`": {
      async run(role) {
        let mr: MergeRequestView | 'cannot';
        if (role === 'fork owner') {
          mr = await outsiders(role, 'ship-fork');
          if (!(await green(mr))) return 'not green';
          await comment('developer', mr, '/hookbot ship');
        } else mr = await opened(role, role, `ship-${slug(role)}`, { labels: ['ship'] });
        if (mr === 'cannot') return mr;
        const merged = (await read(mr)).state === 'merged';
        const kept = (await w.branchHead(mr.source_project_id, mr.source_branch)) !== undefined;
        if (merged) return kept ? 'no' : 'yes';
        // Not merged (the admin's: the merge row's own cell), the branch stays.
        if (role === 'admin' && kept) return 'no';
        return `not merged: ${await w.explain(projects[role], mr.iid)}`;
      },
    },
  });
});
