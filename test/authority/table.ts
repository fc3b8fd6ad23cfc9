/**
 * The authority table as the suite holds it: for every row of docs/security.md's table ("The
 * table"), the write exactly as its first column says it, the file of test/authority/ that drives
 * it, and the outcome expected for each role. table.test.ts compares it with the doc cell for cell;
 * each family file drives its rows as every role and compares what landed with it (`driveRows`).
 *
 * Outcomes, the leading keyword of a doc cell:
 * - `yes`: the write lands for a person of that role who does what the row says;
 * - `no`: she does the act (the server takes it), and the write does not land;
 * - `cannot`: the server refuses her the act itself (a push, an edit), so the bot never sees it;
 * - `only`: the write lands only under what the cell names (a member's command, an approved head,
 *   what she may read): the cell's scenario shows both sides, without it nothing lands, with it
 *   the write does;
 * - `n/a`: the row has no act of a person (the bot's own bookkeeping): nothing to do as a role; the
 *   row's own check runs once instead (`check`);
 * - `as <row>` (in the doc only): the same outcome as that row's cell for the same role, the row
 *   named by the start of its first column (`as merge`: the row `merge (...)`).
 */
import { expect, it } from 'vitest';
import { ROLES, type Role } from '../helpers/authority-world.ts';

export type Outcome = 'yes' | 'no' | 'cannot' | 'only' | 'n/a';
export type Family = 'issues' | 'merge-requests' | 'queue' | 'train' | 'repository';

export interface TableRow {
  write: string;
  family: Family;
  cells: Record<Role, Outcome>;
}

/** The cells of a row in the table's order: admin, master, developer, reporter, guest, non-member, fork owner. */
const cells = (...outcomes: Outcome[]) => {
  if (outcomes.length !== ROLES.length) throw new Error('one outcome per role');
  return Object.fromEntries(ROLES.map((role, i) => [role, outcomes[i]!])) as Record<Role, Outcome>;
};
const Y = 'yes';
const N = 'no';
const C = 'cannot';
const O = 'only';
const NA = 'n/a';

export const TABLE: TableRow[] = [
  {
    write: 'label (an issue opened with "crash" in its title gets `bug`)',
    family: 'issues',
    cells: cells(Y, Y, Y, Y, Y, Y, Y),
  },
  { write: 'comment (a reply to `/hookbot help`)', family: 'issues', cells: cells(Y, Y, Y, Y, Y, Y, Y) },
  {
    write: "status (`hookbot/changelog` on a merge request's head)",
    family: 'merge-requests',
    cells: cells(Y, Y, Y, C, C, C, N),
  },
  {
    write: 'close (an issue labelled `duplicate` is closed)',
    family: 'issues',
    cells: cells(Y, Y, Y, Y, N, N, N),
  },
  {
    write: 'reopen (a closed issue labelled `reopen` is reopened)',
    family: 'issues',
    cells: cells(Y, Y, Y, Y, N, N, N),
  },
  {
    write: 'move (an issue labelled `helpdesk` goes to `acme/helpdesk`)',
    family: 'issues',
    cells: cells(Y, Y, Y, Y, N, N, N),
  },
  {
    write: 'assign (a merge request labelled `review` goes to `lead`)',
    family: 'merge-requests',
    cells: cells(Y, Y, Y, C, C, C, N),
  },
  {
    write: 'merge (labelled `automerge`, `ci/test` green)',
    family: 'merge-requests',
    cells: cells(N, Y, Y, C, C, C, N),
  },
  {
    write: "merge on a member's command (`/hookbot merge`)",
    family: 'merge-requests',
    cells: cells(N, Y, Y, N, N, N, N),
  },
  {
    write: 'merge when build succeeds (armed on a label)',
    family: 'merge-requests',
    cells: cells(N, Y, Y, C, C, C, N),
  },
  {
    write: 'cancel merge when build succeeds (labelled `hold`)',
    family: 'merge-requests',
    cells: cells(Y, Y, Y, C, C, C, N),
  },
  {
    write: 'queue: enter the serial queue, and its merge',
    family: 'queue',
    cells: cells(N, Y, Y, C, C, C, O),
  },
  {
    write: "dequeue on a member's command (`/hookbot dequeue`)",
    family: 'queue',
    cells: cells(N, Y, Y, N, N, N, N),
  },
  {
    write: "an operator's queue controls (pause, resume, remove, front)",
    family: 'queue',
    cells: cells(NA, NA, NA, NA, NA, NA, NA),
  },
  {
    write: 'queue: the push that brings a source branch up to its target',
    family: 'queue',
    cells: cells(N, Y, Y, C, C, C, N),
  },
  {
    write: 'train: a car pushed to a `hookbot/train/` branch',
    family: 'train',
    cells: cells(N, Y, Y, C, C, C, O),
  },
  {
    write: 'train: the landing push (fast-forward of the target)',
    family: 'train',
    cells: cells(N, Y, Y, C, C, C, O),
  },
  { write: 'train: a car branch deleted', family: 'train', cells: cells(N, N, N, C, C, C, C) },
  {
    write: "merge API's `remove_source_branch`",
    family: 'merge-requests',
    cells: cells(N, Y, Y, C, C, C, N),
  },
  {
    write: 'the plan comment on a merge request changing `.hookbot.yml`',
    family: 'repository',
    cells: cells(O, Y, Y, C, C, C, O),
  },
  { write: 'the `hookbot/config` status', family: 'repository', cells: cells(Y, Y, Y, C, C, C, N) },
  { write: "a repository rule's writes", family: 'repository', cells: cells(Y, Y, Y, C, C, C, C) },
  {
    write: "the queue's removal and trouble comments",
    family: 'queue',
    cells: cells(NA, NA, NA, NA, NA, NA, NA),
  },
];

/** How a family file drives one row: an outcome per role, and for `n/a` rows a check of their own. */
export interface RowDriver {
  run?: (role: Role) => Promise<Outcome | string>;
  /** Runs once for a row whose cells are all `n/a` (what the bot does by itself). */
  check?: () => Promise<void>;
}

/**
 * One test per row of the family: each role's scenario (all at once: each has her own items or
 * projects), the outcomes compared with the table's cells; and a test that the family drives
 * exactly its rows of the table.
 */
export function driveRows(family: Family, drivers: Record<string, RowDriver>, timeout = 120_000): void {
  const rows = TABLE.filter((row) => row.family === family);
  it(`drives exactly the table's ${family} rows`, () => {
    expect(Object.keys(drivers).sort()).toEqual(rows.map((row) => row.write).sort());
  });
  for (const row of rows)
    it(
      row.write,
      async () => {
        const driver = drivers[row.write]!;
        const seen = {} as Record<Role, Outcome | string>;
        await Promise.all(
          ROLES.map(async (role) => {
            seen[role] = row.cells[role] === 'n/a' ? 'n/a' : await driver.run!(role);
          }),
        );
        if (driver.check) await driver.check();
        expect(seen).toEqual(row.cells);
      },
      timeout,
    );
}
