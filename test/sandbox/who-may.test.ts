/**
 * Who may do what through the API, as 8.x servers judge it: every write the bot makes, or reads as
 * a person's act, tried by every role over HTTP, one test per row of the table in
 * docs/sandbox.md ("Who may do what"), which is compared with this one cell for cell. Git pushes
 * (over HTTP and SSH, protected and unprotected branches, deletions) have their own table and test:
 * git-push-rules.test.ts.
 *
 * The roles, on public projects unless the row says otherwise: a non-member (who forks the project
 * and opens merge requests from the fork: the "fork owner"), a guest, a reporter, a developer, a
 * master, and the administrator (a member of nothing). What each cell means:
 * - `done`: the write landed (read back as the administrator);
 * - `dropped`: answered 200, but the labels, assignee and milestone the caller gave were dropped,
 *   and no label was created (8.x `filter_params`, docs/server-behaviour.md);
 * - a status code: refused with it, and nothing changed.
 */
import { describe, expect, it, beforeAll } from 'vitest';
import type { MergeRequestRec, ProjectRec, UserRec } from '../../src/sandbox/db.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { protectBranch } from '../../src/sandbox/protected-branches.ts';
import { readDoc, tableUnder } from '../helpers/docs-tables.ts';
import { memberOf, type As } from '../helpers/issuable-world.ts';
import { useSandbox, type CallResult } from '../helpers/sandbox.ts';

const ROLES = ['non-member', 'guest', 'reporter', 'developer', 'master', 'administrator'] as const;
type Role = (typeof ROLES)[number];
const LEVELS: Partial<Record<Role, number>> = {
  guest: GUEST,
  reporter: REPORTER,
  developer: DEVELOPER,
  master: MASTER,
};

type Outcome = string;

interface Row {
  operation: string;
  outcomes: Record<Role, Outcome>;
  run(role: Role): Promise<Outcome>;
}

/** The cells of a row, from the lowest role up. */
const cells = (...outcomes: Outcome[]) =>
  Object.fromEntries(ROLES.map((role, i) => [role, outcomes[i]!])) as Record<Role, Outcome>;

describe('who may do what through the API (docs/sandbox.md "Who may do what")', { timeout: 120_000 }, () => {
  const sandbox = useSandbox();
  let seq = 0;
  const uniq = (what: string) => `${what}-${++seq}`;

  let owner: { user: UserRec; as: As };
  let author: { user: UserRec; as: As };
  const people = {} as Record<Role, { user: UserRec; as: As }>;
  let admin: As;
  let pub: ProjectRec;
  let other: ProjectRec;
  let priv: ProjectRec;
  let milestoneId = 0;
  const forks = new Map<Role, Promise<number>>();

  beforeAll(async () => {
    const { sb, call, db, ctx } = sandbox();
    admin = call;
    const user = (name: string) => memberOf(sb, call, addUser(db, { username: `who-${name}` }));
    owner = user('owner');
    author = user('author');
    for (const role of ROLES)
      people[role] =
        role === 'administrator'
          ? { user: db.data.users.find((u) => u.is_admin && u.username === 'root')!, as: call }
          : user(role);
    const project = (name: string, visibility_level: 0 | 20) =>
      addProject(ctx, {
        name,
        namespace_id: ensureUserNamespace(db, owner.user).id,
        creator_id: owner.user.id,
        visibility_level,
        initialFiles: { 'README.md': `# ${name}\n` },
      });
    pub = await project('who-public', 20);
    other = await project('who-other', 20);
    priv = await project('who-private', 0);
    for (const p of [pub, other, priv]) {
      const join = (u: UserRec, access_level: number) =>
        db.data.members.push({ project_id: p.id, user_id: u.id, access_level, created_at: db.now() });
      join(author.user, DEVELOPER);
      for (const role of ROLES) if (LEVELS[role]) join(people[role].user, LEVELS[role]);
    }
    milestoneId = db.nextId('milestones');
    db.data.milestones.push({
      id: milestoneId,
      iid: 1,
      project_id: pub.id,
      title: 'v1',
      description: '',
      state: 'active',
      due_date: null,
      created_at: db.now(),
      updated_at: db.now(),
    });
    db.data.labels.push({
      id: db.nextId('labels'),
      project_id: pub.id,
      title: 'known',
      color: '#FF0000',
      description: null,
      template: false,
      created_at: db.now(),
      updated_at: db.now(),
    });
    for (const branch of ['open', 'guarded', 'devs-merge']) await branchIn(pub.id, branch);
    protectBranch(db, pub.id, 'guarded', {});
    protectBranch(db, pub.id, 'devs-merge', { developers_can_merge: true });
  });

  const ok = (res: CallResult, ...statuses: number[]) => {
    if (!statuses.includes(res.status)) throw new Error(`${res.status} ${res.text}`);
    return res.body;
  };
  async function branchIn(projectId: number, name: string, as: As = admin) {
    ok(
      await as('POST', `/projects/${projectId}/repository/branches`, {
        body: { branch_name: name, ref: 'master' },
      }),
      201,
    );
  }
  /** A new branch of the project with one commit of its own; its head. */
  async function topic(projectId: number, as: As = admin): Promise<{ branch: string; sha: string }> {
    const branch = uniq('topic');
    await branchIn(projectId, branch, as);
    ok(
      await as('POST', `/projects/${projectId}/repository/files`, {
        body: {
          file_path: `${branch}.txt`,
          branch_name: branch,
          content: `${branch}\n`,
          commit_message: branch,
        },
      }),
      201,
    );
    return { branch, sha: (await sandbox().ctx.git.branch(projectId, branch))!.id };
  }

  const issueOf = async (project: ProjectRec, as: As, extra: Record<string, unknown> = {}) =>
    ok(
      await as('POST', `/projects/${project.id}/issues`, { body: { title: uniq('issue'), ...extra } }),
      200,
    ) as {
      id: number;
    };
  const readIssue = async (project: ProjectRec, id: number) =>
    ok(await admin('GET', `/projects/${project.id}/issues/${id}`), 200);
  const readMr = async (project: ProjectRec, id: number) =>
    ok(await admin('GET', `/projects/${project.id}/merge_requests/${id}`), 200);

  /** A merge request of `author` in `project` from a new branch into `target`. */
  async function mrOfAuthor(
    project: ProjectRec,
    target = 'master',
  ): Promise<MergeRequestRec & { sha: string }> {
    const { branch, sha } = await topic(project.id, author.as);
    const mr = ok(
      await author.as('POST', `/projects/${project.id}/merge_requests`, {
        body: { source_branch: branch, target_branch: target, title: uniq('mr') },
      }),
      200,
    );
    return { ...mr, sha };
  }

  /** The role's fork of the public project (made once), in the role's namespace. */
  function forkOf(role: Role): Promise<number> {
    let fork = forks.get(role);
    if (!fork) {
      fork = (async () => ok(await people[role].as('POST', `/projects/fork/${pub.id}`), 201).id as number)();
      forks.set(role, fork);
    }
    return fork;
  }
  /** A merge request the role opens from a new branch of its fork into the public project. */
  async function mrFromFork(role: Role, extra: Record<string, unknown> = {}, target = 'master') {
    const as = people[role].as;
    const fork = await forkOf(role);
    const { branch, sha } = await topic(fork, as);
    const res = await as('POST', `/projects/${fork}/merge_requests`, {
      body: {
        source_branch: branch,
        target_branch: target,
        title: uniq('fork-mr'),
        target_project_id: pub.id,
        ...extra,
      },
    });
    return { res, fork, branch, sha };
  }

  /** What the caller asks for when it labels, assigns and sets a milestone: a known and a new label. */
  const metadata = () => {
    const fresh = uniq('fresh');
    return {
      fresh,
      body: { labels: `known,${fresh}`, assignee_id: owner.user.id, milestone_id: milestoneId },
    };
  };
  /** `done` when all three landed (the new label made), `dropped` when none did and no label was made. */
  function judged(
    item: { labels: string[]; assignee: { id: number } | null; milestone: { id: number } | null },
    fresh: string,
  ): Outcome {
    const made = sandbox().db.data.labels.some((l) => l.project_id === pub.id && l.title === fresh);
    const all =
      [...item.labels].sort().join(',') === ['known', fresh].sort().join(',') &&
      item.assignee?.id === owner.user.id &&
      item.milestone?.id === milestoneId &&
      made;
    if (all) return 'done';
    if (item.labels.length === 0 && item.assignee === null && item.milestone === null && !made)
      return 'dropped';
    return `partly: ${JSON.stringify({ labels: item.labels, assignee: item.assignee?.id, milestone: item.milestone?.id, made })}`;
  }
  const refused = (res: CallResult) => String(res.status);

  async function closeAndReopen(path: string, as: As, opened: string): Promise<Outcome> {
    const closed = await as('PUT', path, { body: { state_event: 'close' } });
    if (closed.status !== 200) return refused(closed);
    const reopened = await as('PUT', path, { body: { state_event: 'reopen' } });
    if (reopened.status !== 200) return `closed, then ${refused(reopened)}`;
    const state = (await admin('GET', path)).body.state;
    return closed.body.state === 'closed' && state === opened ? 'done' : `state ${state}`;
  }

  async function arm(
    project: ProjectRec,
    mr: { id: number },
    sourceProject: number,
    branch: string,
    sha: string,
    as: As,
  ) {
    ok(
      await admin('POST', `/projects/${sourceProject}/statuses/${sha}`, {
        body: { state: 'pending', name: 'ci', ref: branch },
      }),
      201,
    );
    return as('PUT', `/projects/${project.id}/merge_requests/${mr.id}/merge`, {
      body: { merge_when_build_succeeds: true },
    });
  }

  const ROWS: Row[] = [
    {
      operation: 'open an issue with labels, an assignee and a milestone',
      outcomes: cells('dropped', 'dropped', 'done', 'done', 'done', 'done'),
      async run(role) {
        const { fresh, body } = metadata();
        const issue = await issueOf(pub, people[role].as, body);
        return judged(await readIssue(pub, issue.id), fresh);
      },
    },
    {
      operation: "label, assign and set the milestone of someone else's issue",
      outcomes: cells('403', '403', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, owner.as);
        const { fresh, body } = metadata();
        const res = await people[role].as('PUT', `/projects/${pub.id}/issues/${issue.id}`, { body });
        if (res.status !== 200) return refused(res);
        return judged(await readIssue(pub, issue.id), fresh);
      },
    },
    {
      operation: "label, assign and set the milestone of one's own issue",
      outcomes: cells('dropped', 'dropped', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, people[role].as);
        const { fresh, body } = metadata();
        const res = await people[role].as('PUT', `/projects/${pub.id}/issues/${issue.id}`, { body });
        if (res.status !== 200) return refused(res);
        return judged(await readIssue(pub, issue.id), fresh);
      },
    },
    {
      operation: 'open a merge request from a fork with labels, an assignee and a milestone',
      outcomes: cells('dropped', 'dropped', 'dropped', 'done', 'done', 'done'),
      async run(role) {
        const { fresh, body } = metadata();
        const { res } = await mrFromFork(role, body);
        if (res.status !== 200) return refused(res);
        return judged(await readMr(pub, res.body.id), fresh);
      },
    },
    {
      operation: "label, assign and set the milestone of one's own merge request",
      outcomes: cells('dropped', 'dropped', 'dropped', 'done', 'done', 'done'),
      async run(role) {
        const { res } = await mrFromFork(role);
        const mr = ok(res, 200);
        const { fresh, body } = metadata();
        const edited = await people[role].as('PUT', `/projects/${pub.id}/merge_requests/${mr.id}`, { body });
        if (edited.status !== 200) return refused(edited);
        return judged(await readMr(pub, mr.id), fresh);
      },
    },
    {
      operation: "label, assign and set the milestone of someone else's merge request",
      outcomes: cells('403', '403', '403', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub);
        const { fresh, body } = metadata();
        const res = await people[role].as('PUT', `/projects/${pub.id}/merge_requests/${mr.id}`, { body });
        if (res.status !== 200) return refused(res);
        return judged(await readMr(pub, mr.id), fresh);
      },
    },
    {
      operation: 'comment on an issue',
      outcomes: cells('done', 'done', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, owner.as);
        const res = await people[role].as('POST', `/projects/${pub.id}/issues/${issue.id}/notes`, {
          body: { body: 'hi' },
        });
        return res.status === 201 ? 'done' : refused(res);
      },
    },
    {
      operation: 'comment on a confidential issue',
      outcomes: cells('404', '404', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, owner.as, { confidential: true });
        const res = await people[role].as('POST', `/projects/${pub.id}/issues/${issue.id}/notes`, {
          body: { body: 'hi' },
        });
        return res.status === 201 ? 'done' : refused(res);
      },
    },
    {
      operation: 'comment on a merge request',
      outcomes: cells('done', 'done', 'done', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub);
        const res = await people[role].as('POST', `/projects/${pub.id}/merge_requests/${mr.id}/notes`, {
          body: { body: 'hi' },
        });
        return res.status === 201 ? 'done' : refused(res);
      },
    },
    {
      operation: 'comment on a merge request of a private project',
      outcomes: cells('404', '404', 'done', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(priv);
        const res = await people[role].as('POST', `/projects/${priv.id}/merge_requests/${mr.id}/notes`, {
          body: { body: 'hi' },
        });
        return res.status === 201 ? 'done' : refused(res);
      },
    },
    {
      operation: 'post a commit status',
      outcomes: cells('403', '403', '403', 'done', 'done', 'done'),
      async run(role) {
        const sha = (await sandbox().ctx.git.branch(pub.id, 'master'))!.id;
        const res = await people[role].as('POST', `/projects/${pub.id}/statuses/${sha}`, {
          body: { state: 'success', name: uniq('status') },
        });
        return res.status === 201 ? 'done' : refused(res);
      },
    },
    {
      operation: "close and reopen someone else's issue",
      outcomes: cells('403', '403', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, owner.as);
        return closeAndReopen(`/projects/${pub.id}/issues/${issue.id}`, people[role].as, 'opened');
      },
    },
    {
      operation: "close and reopen one's own issue",
      outcomes: cells('done', 'done', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, people[role].as);
        return closeAndReopen(`/projects/${pub.id}/issues/${issue.id}`, people[role].as, 'opened');
      },
    },
    {
      operation: "close and reopen someone else's merge request",
      outcomes: cells('403', '403', '403', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub);
        return closeAndReopen(`/projects/${pub.id}/merge_requests/${mr.id}`, people[role].as, 'reopened');
      },
    },
    {
      operation: "close and reopen one's own merge request",
      outcomes: cells('done', 'done', 'done', 'done', 'done', 'done'),
      async run(role) {
        const mr = ok((await mrFromFork(role)).res, 200);
        return closeAndReopen(`/projects/${pub.id}/merge_requests/${mr.id}`, people[role].as, 'reopened');
      },
    },
    {
      operation: 'move an issue to another project where one has the same role',
      outcomes: cells('400', '400', 'done', 'done', 'done', 'done'),
      async run(role) {
        const issue = await issueOf(pub, owner.as);
        const res = await people[role].as('POST', `/projects/${pub.id}/issues/${issue.id}/move`, {
          body: { to_project_id: other.id },
        });
        if (res.status !== 201) return refused(res);
        return (await readIssue(pub, issue.id)).state === 'closed' && res.body.project_id === other.id
          ? 'done'
          : 'not moved';
      },
    },
    {
      operation: 'merge into an unprotected branch',
      outcomes: cells('401', '401', '401', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub, 'open');
        const res = await people[role].as('PUT', `/projects/${pub.id}/merge_requests/${mr.id}/merge`);
        if (res.status !== 200) return refused(res);
        return (await readMr(pub, mr.id)).state === 'merged' ? 'done' : 'not merged';
      },
    },
    {
      operation: 'merge into a protected branch',
      outcomes: cells('401', '401', '401', '401', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub, 'guarded');
        const res = await people[role].as('PUT', `/projects/${pub.id}/merge_requests/${mr.id}/merge`);
        if (res.status !== 200) return refused(res);
        return (await readMr(pub, mr.id)).state === 'merged' ? 'done' : 'not merged';
      },
    },
    {
      operation: 'merge into a protected branch that developers may merge to',
      outcomes: cells('401', '401', '401', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub, 'devs-merge');
        const res = await people[role].as('PUT', `/projects/${pub.id}/merge_requests/${mr.id}/merge`);
        if (res.status !== 200) return refused(res);
        return (await readMr(pub, mr.id)).state === 'merged' ? 'done' : 'not merged';
      },
    },
    {
      operation: 'merge when build succeeds (into an unprotected branch)',
      outcomes: cells('401', '401', '401', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub, 'open');
        const res = await arm(pub, mr, pub.id, mr.source_branch, mr.sha, people[role].as);
        if (res.status !== 200) return refused(res);
        return (await readMr(pub, mr.id)).merge_when_build_succeeds === true ? 'done' : 'not armed';
      },
    },
    {
      operation: "cancel merge when build succeeds on someone else's merge request",
      outcomes: cells('401', '401', '401', 'done', 'done', 'done'),
      async run(role) {
        const mr = await mrOfAuthor(pub, 'open');
        ok(await arm(pub, mr, pub.id, mr.source_branch, mr.sha, admin), 200);
        const res = await people[role].as(
          'POST',
          `/projects/${pub.id}/merge_requests/${mr.id}/cancel_merge_when_build_succeeds`,
        );
        if (res.status !== 200) return refused(res);
        return (await readMr(pub, mr.id)).merge_when_build_succeeds === false ? 'done' : 'still armed';
      },
    },
    {
      operation: "cancel merge when build succeeds on one's own merge request",
      outcomes: cells('done', 'done', 'done', 'done', 'done', 'done'),
      async run(role) {
        const { res: opened, fork, branch, sha } = await mrFromFork(role, {}, 'open');
        const mr = ok(opened, 200);
        ok(await arm(pub, mr, fork, branch, sha, admin), 200);
        const res = await people[role].as(
          'POST',
          `/projects/${pub.id}/merge_requests/${mr.id}/cancel_merge_when_build_succeeds`,
        );
        if (res.status !== 200) return refused(res);
        return (await readMr(pub, mr.id)).merge_when_build_succeeds === false ? 'done' : 'still armed';
      },
    },
    {
      operation: 'create a branch through the API',
      outcomes: cells('403', '403', '403', 'done', 'done', 'done'),
      async run(role) {
        const name = uniq(`made-by-${role.replace(' ', '-')}`);
        const res = await people[role].as('POST', `/projects/${pub.id}/repository/branches`, {
          body: { branch_name: name, ref: 'master' },
        });
        if (res.status !== 201) return refused(res);
        return (await sandbox().ctx.git.branch(pub.id, name)) ? 'done' : 'no branch';
      },
    },
    {
      operation: 'fork a public project',
      outcomes: cells('done', 'done', 'done', 'done', 'done', 'done'),
      async run(role) {
        const res = await people[role].as('POST', `/projects/fork/${other.id}`);
        return res.status === 201 && res.body.forked_from_project?.id === other.id ? 'done' : refused(res);
      },
    },
    {
      operation: 'fork a private project',
      outcomes: cells('404', '403', 'done', 'done', 'done', 'done'),
      async run(role) {
        const res = await people[role].as('POST', `/projects/fork/${priv.id}`);
        return res.status === 201 && res.body.forked_from_project?.id === priv.id ? 'done' : refused(res);
      },
    },
  ];

  it.each(ROWS.map((row) => [row.operation, row] as const))('%s', async (_operation, row) => {
    const seen = {} as Record<Role, Outcome>;
    for (const role of ROLES) seen[role] = await row.run(role);
    expect(seen).toEqual(row.outcomes);
  });

  it('the table in docs/sandbox.md holds these rows, cell for cell', () => {
    const rows = tableUnder(readDoc('docs/sandbox.md'), 'Who may do what');
    const plain = (cell: string) => cell.replace(/`/g, '');
    const mine = rows.filter((r) => r.at(-1)!.includes('who-may.test.ts'));
    expect(mine.map((r) => plain(r[0]!))).toEqual(ROWS.map((row) => row.operation));
    for (const r of mine) {
      const row = ROWS.find((x) => x.operation === plain(r[0]!))!;
      expect({ operation: row.operation, cells: r.slice(2, 2 + ROLES.length).map(plain) }).toEqual({
        operation: row.operation,
        cells: ROLES.map((role) => row.outcomes[role]),
      });
    }
    // The other rows are git's, with a table and a test of their own.
    for (const r of rows.filter((x) => !x.at(-1)!.includes('who-may.test.ts')))
      expect(r.at(-1)).toContain('git-push-rules.test.ts');
  });
});
