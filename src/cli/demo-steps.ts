/**
 * The demo's scenario, one step per behaviour of the example rules. Each step acts as a person would
 * (through the API), waits for the bot, checks the outcome on the server, and tells why the bot acted
 * from the decision it recorded.
 */
import type { Runtime } from '../start-from-config.ts';
import type { Decision } from '../rules/index.ts';
import type { Client } from '../api/index.ts';
import { settled, whatTheBotDid, type Expectation } from './demo-outcome.ts';

export interface DemoWorld {
  admin: Client;
  alice: Client;
  runtime: Runtime;
  verbose: boolean;
  say(line: string): void;
  /** Runs the rule sweep once (the scheduler's), for the stale-issue step. */
  sweep?: () => Promise<void>;
}

export interface DemoStep {
  title: string;
  run(world: DemoWorld): Promise<void>;
}

const WEB = 'acme/web';
const HELPDESK = 'acme/helpdesk';

const WAIT_MS = 15_000;

/**
 * Waits for what the step expects of the bot. With the rule expected to do it (`expected`), a wait
 * that cannot end well (the rule paused, its action parked) ends at once, and one that times out
 * says what the bot did instead (demo-outcome.ts): the step's failure names the user's rule and why.
 */
async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = WAIT_MS,
  expected?: { world: DemoWorld } & Expectation,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    const known = expected && settled(expected.world.runtime, expected);
    if (known !== undefined) throw new Error(`no ${what}: ${known}`);
    if (Date.now() > until)
      throw new Error(
        `no ${what} after ${timeoutMs / 1000} s${expected ? `: ${whatTheBotDid(expected.world.runtime, expected)}` : ''}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * What a step expects: `rule` to act on `itemKey` in `project`, for waitFor, in answer to the change
 * the step made at `since` (taken once the bot has seen every earlier change: a decision recorded
 * since then answers this one).
 */
const expecting = (world: DemoWorld, rule: string, itemKey: string, since: number) => ({
  world,
  rule,
  project: WEB,
  itemKey,
  since,
});

/** A check that what must not happen yet did not: its failure says what the bot did. */
function unexpected(world: DemoWorld, what: string, rule: string, itemKey: string): Error {
  return new Error(`${what} (${whatTheBotDid(world.runtime, { rule, project: WEB, itemKey })})`);
}

/** The newest decision on an item in which `rule` matched (what made the bot act). */
function decisionWhere(world: DemoWorld, itemKey: string, rule: string): Decision | undefined {
  for (const record of world.runtime.store.recentDecisions()) {
    const decision = record.decision as Decision;
    if (decision.itemKey === itemKey && decision.evaluation.rules.some((r) => r.rule === rule && r.matched))
      return decision;
  }
  const latest = world.runtime.store.latestDecision(itemKey)?.decision as Decision | undefined;
  return latest?.evaluation.rules.some((r) => r.rule === rule && r.matched) ? latest : undefined;
}

/** Says why: the rule's conditions with the values seen, and what became of each call. */
async function tellWhy(world: DemoWorld, itemKey: string, rule: string): Promise<void> {
  // The decision is recorded once every call of the plan has finished: wait for it a little.
  const decision = await waitFor(
    'the decision',
    async () => decisionWhere(world, itemKey, rule),
    5_000,
  ).catch(() => undefined);
  if (!decision) {
    world.say(`   why: (no decision recorded with rule "${rule}" matching)`);
    return;
  }
  if (world.verbose) {
    for (const line of decision.text.split('\n')) world.say(`   | ${line}`);
    return;
  }
  const evaluation = decision.evaluation.rules.find((r) => r.rule === rule)!;
  world.say(`   why: on ${decision.evaluation.event}, rule "${rule}" matched:`);
  for (const condition of evaluation.conditions) {
    world.say(
      `     - ${condition.describe}: ${JSON.stringify(condition.value)} ${condition.ok ? 'yes' : 'no'}`,
    );
  }
  for (const call of decision.execution.calls.filter(
    (c) => c.rule.split(', ').includes(rule) || c.rule === rule,
  )) {
    world.say(`     -> ${call.status}: ${call.call}`);
  }
}

/** Why a rule did not act: its unmet conditions in the newest decision on the item. */
function tellWhyNot(world: DemoWorld, itemKey: string, rule: string): void {
  const latest = world.runtime.store.latestDecision(itemKey)?.decision as Decision | undefined;
  const evaluation = latest?.evaluation.rules.find((r) => r.rule === rule);
  if (!evaluation) return;
  const unmet = evaluation.conditions
    .filter((c) => !c.ok)
    .map((c) => `${c.describe} (seen ${JSON.stringify(c.value)})`);
  world.say(
    `   why not: rule "${rule}" ${evaluation.applies ? `is held back by: ${unmet.join('; ') || 'nothing'}` : `does not apply (${evaluation.why})`}`,
  );
}

async function projectId(world: DemoWorld, path: string): Promise<number> {
  return (await world.admin.projects.get(path)).id;
}

/** A branch with one commit and a merge request from it, as a developer would open it. */
async function openMergeRequest(world: DemoWorld, branch: string, title: string, labels: string[] = []) {
  await world.alice.branches.create(WEB, { branch_name: branch, ref: 'master' });
  await world.alice.files.create(WEB, {
    file_path: `docs/${branch}.md`,
    branch_name: branch,
    content: `# ${title}\n`,
    commit_message: title,
  });
  return world.alice.mergeRequests.create(WEB, {
    source_branch: branch,
    target_branch: 'master',
    title,
    labels,
  });
}

async function headOf(world: DemoWorld, branch: string): Promise<string> {
  return (await world.admin.branches.get(WEB, branch)).commit.id;
}

/** Lets the bot see the hooks this step caused before the step checks that nothing happened. */
async function settle(world: DemoWorld): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 300));
  await world.runtime.bot.pipeline.idle();
}

export const demoSteps: DemoStep[] = [
  {
    title: 'An issue reported as a bug is labelled and triaged',
    async run(world) {
      const since = Date.now();
      const issue = await world.alice.issues.create(WEB, {
        title: 'Checkout crashes when the cart is empty',
      });
      world.say(`   alice opens ${WEB}#${issue.iid} "${issue.title}"`);
      const expected = expecting(world, 'triage bug reports', `issue:${issue.project_id}:${issue.id}`, since);
      const fresh = await waitFor(
        'bug labels',
        async () => {
          const i = await world.admin.issues.get(WEB, issue.id);
          return i.labels.includes('bug') && i.labels.includes('needs-triage') ? i : undefined;
        },
        WAIT_MS,
        expected,
      );
      const thanks = await waitFor(
        'thank-you comment',
        async () => {
          for await (const note of world.admin.notes.listIssueNotes(WEB, issue.id)) {
            if (note.author.username === 'hookbot' && note.body.includes('Thanks @alice')) return note;
          }
          return undefined;
        },
        WAIT_MS,
        expected,
      );
      world.say(
        `   the bot labelled it [${fresh.labels.join(', ')}] and commented: "${thanks.body.split('\n')[0]}"`,
      );
      await tellWhy(world, `issue:${issue.project_id}:${issue.id}`, 'triage bug reports');
    },
  },
  {
    title: 'A support question is moved to the help desk project',
    async run(world) {
      const since = Date.now();
      const issue = await world.alice.issues.create(WEB, {
        title: 'How do I export my data?',
        labels: ['question'],
      });
      world.say(`   alice asks ${WEB}#${issue.iid} "${issue.title}" with label question`);
      const helpdesk = await projectId(world, HELPDESK);
      const moved = await waitFor(
        'move',
        async () => {
          for await (const i of world.admin.issues.list(helpdesk, { state: 'opened' }))
            if (i.title === issue.title) return i;
          return undefined;
        },
        WAIT_MS,
        expecting(world, 'move support questions', `issue:${issue.project_id}:${issue.id}`, since),
      );
      const original = await world.admin.issues.get(WEB, issue.id);
      if (original.state !== 'closed') throw new Error('the original issue is still open');
      world.say(`   the bot moved it to ${HELPDESK}#${moved.iid}; the original is ${original.state}`);
      await tellWhy(world, `issue:${issue.project_id}:${issue.id}`, 'move support questions');
    },
  },
  {
    title: 'A merge request gets a policy status',
    async run(world) {
      const since = Date.now();
      const mr = await openMergeRequest(world, 'search-box', 'Add a search box to the catalogue page');
      world.say(`   alice opens !${mr.iid} "${mr.title}"`);
      const sha = await headOf(world, 'search-box');
      const status = await waitFor(
        'policy status',
        async () => {
          for await (const s of world.admin.statuses.list(WEB, sha))
            if (s.name === 'hookbot/policy') return s;
          return undefined;
        },
        WAIT_MS,
        expecting(world, 'title policy', `merge_request:${mr.project_id}:${mr.id}`, since),
      );
      world.say(
        `   the bot posted hookbot/policy: ${status.status} ("${status.description}") on ${sha.slice(0, 8)}`,
      );
      await tellWhy(world, `merge_request:${mr.project_id}:${mr.id}`, 'title policy');
    },
  },
  {
    title: 'An MR labelled automerge is merged once its required statuses succeed, not before',
    async run(world) {
      const mr = await openMergeRequest(world, 'price-filter', 'Filter the catalogue by price', [
        'automerge',
      ]);
      const key = `merge_request:${mr.project_id}:${mr.id}`;
      const sha = await headOf(world, 'price-filter');
      world.say(`   alice opens !${mr.iid} "${mr.title}" labelled automerge; no build has reported yet`);
      await settle(world);
      if ((await world.admin.mergeRequests.get(WEB, mr.id)).state !== 'opened')
        throw unexpected(world, 'merged without statuses', 'merge when green', key);
      tellWhyNot(world, key, 'merge when green');
      await world.alice.statuses.create(WEB, sha, { state: 'success', name: 'ci/build' });
      world.say('   ci/build succeeds (ci/test has not reported: a missing status is not a passing one)');
      await settle(world);
      if ((await world.admin.mergeRequests.get(WEB, mr.id)).state !== 'opened')
        throw unexpected(world, 'merged with ci/test missing', 'merge when green', key);
      tellWhyNot(world, key, 'merge when green');
      const since = Date.now();
      await world.alice.statuses.create(WEB, sha, { state: 'success', name: 'ci/test' });
      world.say('   ci/test succeeds');
      const merged = await waitFor(
        'merge',
        async () => {
          const m = await world.admin.mergeRequests.get(WEB, mr.id);
          return m.state === 'merged' ? m : undefined;
        },
        WAIT_MS,
        expecting(world, 'merge when green', key, since),
      );
      world.say(`   the bot merged !${merged.iid} (head ${sha.slice(0, 8)}, source branch removed)`);
      await tellWhy(world, key, 'merge when green');
    },
  },
  {
    title: 'Adding do-not-merge cancels merge-when-build-succeeds',
    async run(world) {
      const mr = await openMergeRequest(world, 'wishlist', 'Keep a wish list of products', ['automerge']);
      const key = `merge_request:${mr.project_id}:${mr.id}`;
      const sha = await headOf(world, 'wishlist');
      world.say(`   alice opens !${mr.iid} "${mr.title}" labelled automerge; builds start`);
      // The opening's own decision first: the statuses below are what the rule answers.
      await settle(world);
      const armedSince = Date.now();
      await world.alice.statuses.create(WEB, sha, { state: 'running', name: 'ci/build' });
      await world.alice.statuses.create(WEB, sha, { state: 'pending', name: 'ci/test' });
      const watching = () => world.runtime.store.watched().some((entry) => entry.itemKey === key);
      await waitFor(
        'merge-when-build-succeeds set',
        async () => (watching() ? true : undefined),
        WAIT_MS,
        expecting(world, 'arm merge when build succeeds', key, armedSince),
      );
      world.say(
        '   the bot set merge-when-build-succeeds (builds pending, none failed): it merges this head itself once they pass',
      );
      await tellWhy(world, key, 'arm merge when build succeeds');
      await settle(world);
      const blockedSince = Date.now();
      await world.alice.mergeRequests.update(WEB, mr.id, { labels: ['automerge', 'do-not-merge'] });
      world.say('   alice adds do-not-merge');
      await waitFor(
        'merge-when-build-succeeds cancelled',
        async () => {
          const m = await world.admin.mergeRequests.get(WEB, mr.id);
          return !watching() && !m.merge_when_build_succeeds && m.state === 'opened' ? true : undefined;
        },
        WAIT_MS,
        expecting(world, 'stop auto-merge when blocked', key, blockedSince),
      );
      world.say('   the bot cancelled merge-when-build-succeeds; the MR stays open');
      await tellWhy(world, key, 'stop auto-merge when blocked');
    },
  },
  {
    title: 'A stale issue is closed by a sweep',
    async run(world) {
      if (!world.sweep) throw new Error('no sweep available');
      const longAgo = new Date(Date.now() - 90 * 86_400_000).toISOString();
      const issue = await world.admin.issues.create(WEB, {
        title: 'Old idea nobody followed up',
        created_at: longAgo,
      });
      await settle(world);
      await world.admin.issues.update(WEB, issue.id, { updated_at: longAgo });
      await settle(world);
      world.say(
        `   ${WEB}#${issue.iid} was last updated ${longAgo.slice(0, 10)} (90 days ago); the daily sweep runs`,
      );
      const since = Date.now();
      await world.sweep();
      const closed = await waitFor(
        'close of the stale issue',
        async () => {
          const i = await world.admin.issues.get(WEB, issue.id);
          return i.state === 'closed' ? i : undefined;
        },
        WAIT_MS,
        expecting(world, 'close stale issues', `issue:${issue.project_id}:${issue.id}`, since),
      );
      world.say(`   the sweep closed #${closed.iid} with a comment`);
      await tellWhy(world, `issue:${issue.project_id}:${issue.id}`, 'close stale issues');
    },
  },
];
