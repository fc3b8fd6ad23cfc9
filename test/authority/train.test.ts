/**
 * The authority table's merge train rows (docs/security.md "The table": a car pushed to a
 * `hookbot/train/` branch, the landing push, a car branch deleted), driven as every role against
 * the sandbox over HTTP and git, with the bot running as in production (helpers/authority-world.ts)
 * and its merge_queue sweep (which drives the trains) run by the test until the queue stands still.
 * Queues have `depth: 2`. Each role has projects of her own, so the cells run side by side; the car
 * push and the landing are two rows of one scenario per role, read twice. table.ts holds the
 * expected outcomes, table.test.ts ties them to the doc.
 *
 * - A car and its landing: the role opens a merge request labelled `automerge` from her own branch
 *   (reporters, guests and non-members cannot push one: `cannot`, the 403 asserted). A car was
 *   pushed for her when a push to a `hookbot/train/` branch of the project (its push events) holds
 *   her head; it landed when master is that car's commit and the merge request is merged.
 * - The fork owner (`only the head a developer approved`), three merge requests from her fork, in
 *   projects of their own: the first is labelled by a developer (no car, nothing lands), then
 *   approved by a developer's comment `/hookbot merge` (a car with its head, landed); the second is
 *   approved by a comment, after which she pushes a new head to her fork before the train built its
 *   car: no car may hold that head (the target's CI would build it) and nothing of it lands (it
 *   leaves the queue at once: docs/merge-queue.md, "Outsiders and forks"); the third is approved,
 *   rides a car (its build held), and she pushes while it waits: no car holds the new head and
 *   nothing of it lands, whatever the CI says of the cars.
 * - A car branch deleted: a developer's merge request in a queue named `held`, whose car builds
 *   (branches `.../held/...`) post `pending` and never finish; while it waits, the role pushes a
 *   commit onto the car's branch (reporters, guests, non-members and the fork owner cannot: 403).
 *   The CI's user then passes the car's own commit, the car lands, and the cleanup must leave the
 *   branch with her commit (`no`: the deletion does not land on her push). The row's check: a car
 *   branch nobody pushed to is deleted once its car landed (the first rows' projects keep none).
 */
import { afterAll, beforeAll, describe, expect } from 'vitest';
import {
  refusedPush,
  startAuthorityWorld,
  type AuthorityWorld,
  type MergeRequestView,
  type Project,
  type Role,
} from '../helpers/authority-world.ts';
import { driveRows, type Outcome } from './table.ts';

const PREFIX = 'atrn';
const TRAIN = 'hookbot/train/';
const slug = (role: Role) => role.replace(' ', '-');
const rulesOf = (queue: string) => `
rules:
  - name: train automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], depth: 2, name: ${queue} }
  - name: train on command
    on: [note.created]
    for: merge_requests
    if: [ { state: opened }, { note: { matches: '^/hookbot merge\\b' } } ]
    do:
      - queue: { statuses: [ci/test], depth: 2, name: ${queue} }
`;
const MEMBERS = ['admin', 'master', 'developer'] as const;
type Member = (typeof MEMBERS)[number];
const isMember = (role: Role): role is Member => (MEMBERS as readonly string[]).includes(role);

/** What a train did with one merge request. */
interface Ride {
  /** A car holding its head was pushed to a train branch. */
  car: boolean;
  /** It is merged, master is a car's commit, and its head is in master's history. */
  landed: boolean;
}

describe('the authority table: merge train rows, every role', () => {
  let w: AuthorityWorld;
  beforeAll(async () => {
    const rules: Record<string, string> = {};
    for (const role of ['admin', 'master', 'developer', 'fork owner'] as const)
      rules[`train-${slug(role)}`] = rulesOf('default');
    rules['pushed-fork-owner'] = rulesOf('default');
    rules['riding-fork-owner'] = rulesOf('held');
    for (const role of MEMBERS) rules[`car-${slug(role)}`] = rulesOf('held');
    w = await startAuthorityWorld({ prefix: PREFIX, rules, held: (branch) => branch.includes('/held/') });
  }, 60_000);
  afterAll(async () => {
    await w?.close();
  });

  async function open(
    role: Role,
    project: Project,
    branch: string,
    labels: string[],
  ): Promise<MergeRequestView> {
    const { mr, push, refusal } = await w.openMergeRequest(role, project, branch, { labels });
    if (!mr) throw new Error(`${role} could not open her merge request: ${push.error || refusal}`);
    await w.settle();
    return mr;
  }
  async function developer(project: Project, mr: MergeRequestView, what: 'label' | 'command'): Promise<void> {
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
  /** Whether `sha` is in the history of `ref` (a commit) of the project. */
  const holds = async (projectId: number, ref: string, sha: string) =>
    (await w.history(projectId, ref)).some((commit) => commit.id === sha);
  async function ride(project: Project, mr: MergeRequestView, head = mr.sha): Promise<Ride> {
    const cars = await w.pushedTo(project.id, TRAIN);
    let car = false;
    for (const pushed of cars) if (await holds(project.id, pushed.after, head)) car = true;
    const master = await w.branchHead(project.id, 'master');
    const landed =
      (await w.mr(project, mr.id)).state === 'merged' &&
      cars.some((pushed) => pushed.after === master) &&
      (await holds(project.id, 'master', head));
    return { car, landed };
  }

  /** The car and landing scenario of a role, read by two rows. */
  const trains = new Map<Role, Promise<{ car: Outcome | string; landing: Outcome | string }>>();
  function trainScenario(role: Role) {
    let scenario = trains.get(role);
    if (!scenario) {
      scenario = role === 'fork owner' ? forkScenario() : memberScenario(role);
      trains.set(role, scenario);
    }
    return scenario;
  }
  async function memberScenario(role: Role) {
    if (!isMember(role)) {
      const project = await w.project('train-developer');
      const push = await refusedPush(w, role, project.url, `refs/heads/${slug(role)}-topic`);
      if (push.ok || !/403/.test(push.error)) throw new Error(`${role}'s push: ${push.error || 'taken'}`);
      return { car: 'cannot', landing: 'cannot' };
    }
    const project = await w.project(`train-${slug(role)}`);
    const mr = await open(role, project, `ride-${slug(role)}`, ['automerge']);
    await w.quiesceQueue();
    const seen = await ride(project, mr);
    return { car: seen.car ? 'yes' : 'no', landing: seen.landed ? 'yes' : 'no' };
  }
  async function forkScenario() {
    const [{ labelled, approved }, before, riding] = await Promise.all([
      approvedRide(),
      pushedBeforeItsCar(),
      pushedWhileRiding(),
    ]);
    const facts = JSON.stringify({ labelled, approved, before, riding });
    const only = (what: 'car' | 'landed') =>
      !labelled[what] &&
      approved[what] &&
      !before[what] &&
      !riding.landed &&
      (what === 'landed' || !riding.car)
        ? 'only'
        : facts;
    return { car: only('car'), landing: only('landed') };
  }
  /** A developer's label: nothing; her comment: the approved head rides and lands. */
  async function approvedRide() {
    const project = await w.project('train-fork-owner');
    const mr = await open('fork owner', project, 'ride-fork', []);
    await developer(project, mr, 'label');
    await w.quiesceQueue();
    const labelled = await ride(project, mr);
    await developer(project, mr, 'command');
    await w.quiesceQueue();
    return { labelled, approved: await ride(project, mr) };
  }
  /** Approved at one head, pushed before the train built its car: that head never rides. */
  async function pushedBeforeItsCar(): Promise<Ride> {
    const project = await w.project('pushed-fork-owner');
    const mr = await open('fork owner', project, 'ride-late', []);
    await developer(project, mr, 'command');
    const pushed = await w.pushOnto('fork owner', project, 'ride-late', { 'unreviewed.txt': 'unreviewed\n' });
    if (!pushed.ok) throw new Error(`the fork owner's push: ${pushed.error}`);
    await w.settle();
    await w.quiesceQueue();
    return ride(project, mr, pushed.sha);
  }
  /**
   * Approved, its car pushed (its build held), then pushed to: the new head rides no car (every car
   * of the project passes then, as the CI would pass them) and lands nowhere.
   */
  async function pushedWhileRiding(): Promise<Ride> {
    const project = await w.project('riding-fork-owner');
    const mr = await open('fork owner', project, 'ride-held', []);
    await developer(project, mr, 'command');
    await w.quiesceQueue();
    if ((await w.pushedTo(project.id, TRAIN)).length === 0) throw new Error('no car for the approved head');
    const pushed = await w.pushOnto('fork owner', project, 'ride-held', { 'unreviewed.txt': 'unreviewed\n' });
    if (!pushed.ok) throw new Error(`the fork owner's push: ${pushed.error}`);
    await w.settle();
    await w.quiesceQueue();
    for (const car of await w.pushedTo(project.id, TRAIN)) {
      const passed = await w.people.ci.as('POST', `/projects/${project.id}/statuses/${car.after}`, {
        body: { state: 'success', name: 'ci/test', ref: car.ref.slice('refs/heads/'.length) },
      });
      if (passed.status !== 201) throw new Error(`the CI's status: ${passed.status}`);
    }
    await w.quiesceQueue();
    return ride(project, mr, pushed.sha);
  }

  /** The deletion row's car of a role's project, once it waits for its held build. */
  const cars = new Map<
    Member,
    Promise<{ project: Project; mr: MergeRequestView; branch: string; sha: string }>
  >();
  function heldCar(role: Member) {
    let car = cars.get(role);
    if (!car) {
      car = (async () => {
        const project = await w.project(`car-${slug(role)}`);
        const mr = await open('developer', project, `held-car-${slug(role)}`, ['automerge']);
        await w.quiesceQueue();
        const pushed = (await w.pushedTo(project.id, TRAIN)).at(-1);
        if (!pushed) throw new Error(`no car in ${project.path}`);
        return { project, mr, branch: pushed.ref.slice('refs/heads/'.length), sha: pushed.after };
      })();
      cars.set(role, car);
    }
    return car;
  }

  driveRows('train', {
    'train: a car pushed to a `hookbot/train/` branch': {
      run: async (role) => (await trainScenario(role)).car,
    },
    'train: the landing push (fast-forward of the target)': {
      run: async (role) => (await trainScenario(role)).landing,
    },
    'train: a car branch deleted': {
      async run(role) {
        if (!isMember(role)) {
          const { project, branch } = await heldCar('developer');
          const push = await refusedPush(w, role, project.url, `refs/heads/${branch}`);
          return !push.ok && /403/.test(push.error) ? 'cannot' : `push: ${push.error || 'taken'}`;
        }
        const { project, mr, branch, sha } = await heldCar(role);
        const hers = await w.pushOnto(role, project, branch, { [`${slug(role)}.txt`]: 'mine\n' });
        if (!hers.ok) return `her push refused: ${hers.error}`;
        await w.settle();
        // The car's own commit passes; it lands, and the cleanup comes to its branch.
        const passed = await w.people.ci.as('POST', `/projects/${project.id}/statuses/${sha}`, {
          body: { state: 'success', name: 'ci/test', ref: branch },
        });
        if (passed.status !== 201) throw new Error(`the CI's status: ${passed.status}`);
        await w.quiesceQueue();
        if ((await w.mr(project, mr.id)).state !== 'merged') return 'the car did not land';
        const head = await w.branchHead(project.id, branch);
        return head === hers.sha ? 'no' : head === undefined ? 'yes' : `branch at ${head}`;
      },
      async check() {
        for (const role of ['master', 'developer'] as const) {
          await trainScenario(role);
          const project = await w.project(`train-${role}`);
          const left = (
            (await w.root('GET', `/projects/${project.id}/repository/branches`, { query: { per_page: 100 } }))
              .body as { name: string }[]
          ).filter((branch) => branch.name.startsWith(TRAIN));
          expect({ role, left }).toEqual({ role, left: [] });
        }
      },
    },
  });
});
