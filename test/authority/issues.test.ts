/**
 * The authority table's issue rows (docs/security.md "The table": label, comment, close, reopen,
 * move), driven as every role against the sandbox over HTTP, with the bot running as in production
 * (helpers/authority-world.ts): each role's person opens her own issue on the public project and
 * does what the row says with her own token; the bot hears it through its hook; the test reads back
 * what landed (labels, notes, state, the issue in the other project). One project holds the five
 * rules (each reads only its own label or command); each role's issues are her own, so the cells
 * run side by side. table.ts holds the expected outcomes, table.test.ts ties them to the doc.
 *
 * - label: she opens an issue with "crash" in its title; `bug` is the rule's.
 * - comment: she comments `/hookbot help` on her issue; the bot answers once.
 * - close, reopen, move: she labels her own issue (`duplicate`; `reopen` after closing it herself;
 *   `helpdesk`). 8.x drops the labels of an author without `admin_issue` (guests, non-members, the
 *   fork owner, who is a non-member here): she did the act, the server kept no label, and the bot
 *   does nothing (`no`). The helpdesk project is in a group of the bot's only: the bot moves the
 *   issue of a reporter who is no member there (the operator's rule decides).
 */
import { afterAll, beforeAll, describe } from 'vitest';
import {
  startAuthorityWorld,
  type AuthorityWorld,
  type Project,
  type Role,
} from '../helpers/authority-world.ts';
import { driveRows, type Outcome } from './table.ts';

const PREFIX = 'aiss';
const HELPDESK = `${PREFIX}-desk/helpdesk`;

const RULES = `
rules:
  - name: label crashes
    on: [issue.open]
    for: issues
    if:
      - title: { matches: '(?i)\\bcrash' }
    do:
      - label: { add: [bug] }
  - name: help
    on: [note.created]
    if:
      - note: { matches: '^/hookbot help\\b' }
    do:
      - comment: 'Commands: /hookbot merge (a developer, on a merge request).'
  - name: close duplicates
    on: [issue.open, issue.update]
    for: issues
    if:
      - state: opened
      - labels: { any: [duplicate] }
    do: [close]
  - name: reopen on label
    on: [issue.update]
    for: issues
    if:
      - state: closed
      - labels: { any: [reopen] }
    do: [reopen]
  - name: move to helpdesk
    on: [issue.open, issue.update]
    for: issues
    if:
      - state: opened
      - labels: { any: [helpdesk] }
    do:
      - move: { to: ${HELPDESK} }
`;

interface IssueView {
  id: number;
  title: string;
  state: string;
  labels: string[];
}

describe('the authority table: issue rows, every role', () => {
  let w: AuthorityWorld;
  let project: Project;
  let helpdesk: Project;

  beforeAll(async () => {
    w = await startAuthorityWorld({ prefix: PREFIX, rules: { web: RULES } });
    project = await w.project('web');
    helpdesk = await w.project('helpdesk', { namespace: w.otherGroup('desk') });
    if (helpdesk.path !== HELPDESK) throw new Error(`the helpdesk is ${helpdesk.path}`);
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  /** The role opens an issue on the project; undefined when the server refused it. */
  async function open(role: Role, title: string): Promise<IssueView | undefined> {
    const res = await w.people[role].as('POST', `/projects/${project.id}/issues`, { body: { title } });
    return res.status === 200 || res.status === 201 ? (res.body as IssueView) : undefined;
  }
  const read = async (id: number) =>
    (await w.root('GET', `/projects/${project.id}/issues/${id}`)).body as IssueView;
  /** The role labels her own issue; whether the server took the edit (a dropped label is taken). */
  async function label(role: Role, issue: IssueView, name: string): Promise<boolean> {
    const res = await w.people[role].as('PUT', `/projects/${project.id}/issues/${issue.id}`, {
      body: { labels: name },
    });
    return res.status === 200;
  }
  /** `no` when her label was dropped (the bot then has nothing to act on); what was seen otherwise. */
  const notActed = (seen: IssueView, name: string, what: string) =>
    seen.labels.includes(name) ? `labelled ${name}, not ${what}` : 'no';

  driveRows('issues', {
    'label (an issue opened with "crash" in its title gets `bug`)': {
      async run(role): Promise<Outcome | string> {
        const issue = await open(role, `It crashes on start (${role})`);
        if (!issue) return 'cannot';
        await w.settle();
        return (await read(issue.id)).labels.includes('bug') ? 'yes' : 'no';
      },
    },
    'comment (a reply to `/hookbot help`)': {
      async run(role) {
        const issue = await open(role, `How do I ask the bot? (${role})`);
        if (!issue) return 'cannot';
        const res = await w.people[role].as('POST', `/projects/${project.id}/issues/${issue.id}/notes`, {
          body: { body: '/hookbot help' },
        });
        if (res.status !== 201) return 'cannot';
        await w.settle();
        const answers = (await w.botNotes(project, 'issues', issue.id)).filter((body) =>
          body.startsWith('Commands:'),
        );
        return answers.length === 1 ? 'yes' : answers.length === 0 ? 'no' : `${answers.length} answers`;
      },
    },
    'close (an issue labelled `duplicate` is closed)': {
      async run(role) {
        const issue = await open(role, `Same as the other one (${role})`);
        if (!issue || !(await label(role, issue, 'duplicate'))) return 'cannot';
        await w.settle();
        const seen = await read(issue.id);
        return seen.state === 'closed' ? 'yes' : notActed(seen, 'duplicate', 'closed');
      },
    },
    'reopen (a closed issue labelled `reopen` is reopened)': {
      async run(role) {
        const issue = await open(role, `Closed too soon (${role})`);
        if (!issue) return 'cannot';
        const closed = await w.people[role].as('PUT', `/projects/${project.id}/issues/${issue.id}`, {
          body: { state_event: 'close' },
        });
        if (closed.status !== 200 || !(await label(role, issue, 'reopen'))) return 'cannot';
        await w.settle();
        const seen = await read(issue.id);
        return seen.state !== 'closed' ? 'yes' : notActed(seen, 'reopen', 'reopened');
      },
    },
    'move (an issue labelled `helpdesk` goes to `acme/helpdesk`)': {
      async run(role) {
        const title = `Where is the manual? (${role})`;
        const issue = await open(role, title);
        if (!issue || !(await label(role, issue, 'helpdesk'))) return 'cannot';
        await w.settle();
        const seen = await read(issue.id);
        const there = (
          (await w.root('GET', `/projects/${helpdesk.id}/issues`, { query: { per_page: 100 } }))
            .body as IssueView[]
        ).some((moved) => moved.title === title);
        if (seen.state === 'closed' && there) return 'yes';
        return there ? 'moved, original open' : notActed(seen, 'helpdesk', 'moved');
      },
    },
  });
});
