/**
 * The authority table's repository rows (docs/security.md "The table": the plan comment on a
 * merge request changing `.hookbot.yml`, the `hookbot/config` status, a repository rule's writes),
 * driven as every role against the sandbox over HTTP and git, with the bot running as in production
 * (helpers/authority-world.ts) with `rules.repository.enabled` and the operator's rules empty.
 * table.ts holds the expected outcomes, table.test.ts ties them to the doc.
 *
 * - The plan and `hookbot/config` (one scenario per role, read by two rows): in a project with one
 *   public and one confidential open issue (the sandbox's root opened both), the role pushes a
 *   branch that adds a `.hookbot.yml` labelling every issue and opens a merge request from it (the
 *   fork owner from her fork; reporters, guests and non-members cannot push: `cannot`, the 403
 *   asserted). The plan: `yes` when the bot's comment plans the label on both issues (its author
 *   may read the confidential one), `only` when on the public one alone (what she may read), `no`
 *   when there is no plan. `hookbot/config`: `yes` when the bot posted it on the merge request's
 *   head, `no` otherwise.
 * - A repository rule's writes: in a project of her own, the role pushes a `.hookbot.yml` to the
 *   default branch (labelling issues with "crash" in their title `repo-bug`); the non-member then
 *   opens such an issue. `yes` when the label lands. The developer's project has an unprotected
 *   master (the cell says so: 8.x lets her push a protected one only with `developers_can_push`);
 *   the others' master is protected (masters push, the admin as an owner). The fork owner cannot
 *   push the project's default branch (`cannot`, the 403 asserted); the `.hookbot.yml` she pushes to
 *   her fork's default branch is not read for the project either (an issue there is not labelled).
 */
import { afterAll, beforeAll, describe } from 'vitest';
import {
  refusedPush,
  startAuthorityWorld,
  type AuthorityWorld,
  type Project,
  type Role,
} from '../helpers/authority-world.ts';
import { driveRows, type Outcome } from './table.ts';

const PREFIX = 'arep';
const FILE = '.hookbot.yml';
const AUTHORS = ['admin', 'master', 'developer', 'fork owner'] as const;
type Author = (typeof AUTHORS)[number];
const isAuthor = (role: Role): role is Author => (AUTHORS as readonly string[]).includes(role);
const slug = (role: Role) => role.replace(' ', '-');

const TRIAGE = (role: Role) => `rules:
  - name: triage by ${slug(role)}
    on: [issue.open, issue.update]
    for: issues
    do:
      - label: { add: [triaged] }
`;
const CRASHES = `rules:
  - name: repository crashes
    on: [issue.open]
    for: issues
    if:
      - title: { matches: '(?i)crash' }
    do:
      - label: { add: [repo-bug] }
`;

interface IssueView {
  id: number;
  iid: number;
  labels: string[];
}

describe('the authority table: repository rows, every role', () => {
  let w: AuthorityWorld;
  let plan: Project;
  let open: IssueView;
  let secret: IssueView;

  beforeAll(async () => {
    w = await startAuthorityWorld({ prefix: PREFIX, rules: {}, repositoryRules: true });
    plan = await w.project('plan');
    const issue = async (title: string, confidential: boolean) =>
      (await w.root('POST', `/projects/${plan.id}/issues`, { body: { title, confidential } }))
        .body as IssueView;
    open = await issue('An open question', false);
    secret = await issue('A security report', true);
    await w.settle();
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  async function refused(role: Role, project: Project, ref: string): Promise<'cannot'> {
    const push = await refusedPush(w, role, project.url, ref);
    if (push.ok || !/403/.test(push.error)) throw new Error(`${role}'s push: ${push.error || 'taken'}`);
    return 'cannot';
  }

  /** The plan row's and the config row's scenario of a role. */
  const reviews = new Map<Author, Promise<{ plan: Outcome | string; config: Outcome | string }>>();
  function review(role: Author) {
    let scenario = reviews.get(role);
    if (!scenario) {
      scenario = (async () => {
        const { mr, push, refusal } = await w.openMergeRequest(role, plan, `rules-${slug(role)}`, {
          files: { [FILE]: TRIAGE(role) },
        });
        if (!mr) throw new Error(`${role} could not open her merge request: ${push.error || refusal}`);
        await w.settle();
        const comment = (await w.botNotes(plan, 'merge_requests', mr.id)).find((body) =>
          body.includes('dry run'),
        );
        const planned = /would add label triaged to \d+ issues?: ([^\n]*)/.exec(comment ?? '')?.[1] ?? '';
        const listed = (issue: IssueView) => planned.split(', ').includes(`#${issue.iid}`);
        const planOutcome =
          comment === undefined
            ? 'no'
            : listed(open) && listed(secret)
              ? 'yes'
              : listed(open)
                ? 'only'
                : `planned: "${planned}"`;
        const config = (await w.statuses(mr.source_project_id, mr.sha)).some(
          (s) => s.name === 'hookbot/config',
        );
        return { plan: planOutcome, config: config ? 'yes' : 'no' };
      })();
      reviews.set(role, scenario);
    }
    return scenario;
  }

  /** The non-member opens an issue with "crash" in its title; whether it got the repository rule's label. */
  async function crashLabelled(project: Project, who: Role): Promise<boolean> {
    const res = await w.people['non-member'].as('POST', `/projects/${project.id}/issues`, {
      body: { title: `It crashes (${who})` },
    });
    if (res.status !== 201 && res.status !== 200) throw new Error(`the issue: ${res.status}`);
    await w.settle();
    const issue = (await w.root('GET', `/projects/${project.id}/issues/${(res.body as IssueView).id}`))
      .body as IssueView;
    return issue.labels.includes('repo-bug');
  }

  driveRows('repository', {
    'the plan comment on a merge request changing `.hookbot.yml`': {
      run: async (role) =>
        isAuthor(role) ? (await review(role)).plan : refused(role, plan, `refs/heads/${slug(role)}`),
    },
    'the `hookbot/config` status': {
      run: async (role) =>
        isAuthor(role) ? (await review(role)).config : refused(role, plan, `refs/heads/${slug(role)}-config`),
    },
    "a repository rule's writes": {
      async run(role) {
        if (!isAuthor(role)) return refused(role, await w.project('repo-master'), 'refs/heads/master');
        const project = await w.project(`repo-${slug(role)}`, { protect: role !== 'developer' });
        if (role === 'fork owner') {
          await refused(role, project, 'refs/heads/master');
          const fork = await w.forkOf(project);
          const mine = await w.pushBranch(role, project, 'master', { [FILE]: CRASHES }, { from: 'master' });
          if (!mine.ok) throw new Error(`her push to her fork ${fork.path}: ${mine.error}`);
          await w.settle();
          return (await crashLabelled(project, role)) ? "her fork's file was read" : 'cannot';
        }
        const pushed = await w.pushBranch(role, project, 'master', { [FILE]: CRASHES }, { from: 'master' });
        if (!pushed.ok) return `her push refused: ${pushed.error}`;
        await w.settle();
        return (await crashLabelled(project, role)) ? 'yes' : 'no';
      },
    },
  });
});
