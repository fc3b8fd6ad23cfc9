/**
 * A bot's state as the status page tests see it: a memory store holding a decision, a watched MR, a
 * parked action and a paused rule, and the status router served on 127.0.0.1 (random port) by the
 * same ops app the bot uses. The API token appears in a decision text, a call error, a parked
 * action's error and a rules problem: the page must show none of them.
 */
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { createOpsApp, type OpsAppOptions } from '../../src/receiver/ops-app.ts';
import type { Evaluation } from '../../src/rules/engine/engine.ts';
import type { ExecutionReport } from '../../src/rules/executor/executor.ts';
import { decisionText, type Decision } from '../../src/rules/item/process-item.ts';
import type { RulesState } from '../../src/rules/grammar/rules-holder.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import type { StateStore } from '../../src/state/store.ts';
import { createDeliveryLog, type DeliveryLog } from '../../src/status/delivery-log.ts';
import { createStatusRouter, type StatusRouterOptions } from '../../src/status/status-page.ts';

export const TOKEN = 'glpat-STATUS-secret-0001';
export const HOOK_SECRET = 'hook-STATUS-secret-0002';
/** The page is read at this time: relative times are stable. */
export const NOW = Date.UTC(2016, 7, 12, 15, 30, 0);
export const MINUTE = 60_000;

export const EVIL_TITLE = '<script>window.pwned = 1</script> Fix "login" & <b>logout</b>';
export const TRAIN_SHA = 'c0ffee1'.padEnd(40, '0');
export const TRAIN_REMOVAL = 'ci/test failed on the car 5e5e5e5 of the train (master at aaaaaaa with !21)';
export const HEAD_SHA = '4f2e9c1d8a7b6e5f4d3c2b1a09f8e7d6c5b4a392';
export const MR_KEY = 'merge_request:5:42';
export const WATCH_RULE = 'automerge-when-green';
export const PARK_REASON = 'merge refused: 405 Method Not Allowed (the MR is closed)';
export const PAUSE_REASON = 'would close 80 of 100 issues (max_share 0.5)';
export const RULES_PROBLEM = `rules/acme/web.yml:12:9: unknown action "coment" (did you mean "comment"?) near ${TOKEN}`;

const evaluation: Evaluation = {
  item: {
    kind: 'merge_request',
    id: 42,
    iid: 7,
    project: 'acme/web',
    title: EVIL_TITLE,
    state: 'opened',
    labels: ['automerge'],
    sha: HEAD_SHA,
  },
  trigger: { kind: 'merge_request', action: 'update', byBot: false },
  event: 'merge_request.update',
  at: new Date(NOW - 5 * MINUTE).toISOString(),
  rules: [
    {
      rule: 'triage-bugs',
      applies: false,
      why: 'the rule is for issues',
      matched: false,
      conditions: [],
      actions: [],
      planned: [],
    },
    {
      rule: 'policy-status',
      applies: true,
      matched: true,
      conditions: [{ describe: 'labels: any of [automerge]', value: ['automerge'], ok: true }],
      actions: [],
      planned: [],
    },
  ],
  plan: [
    {
      action: 'status',
      rule: 'policy-status',
      reason: 'the MR follows the policy',
      call: {
        op: 'statuses.create',
        args: { project: 5, sha: HEAD_SHA, state: 'success', name: 'policy' },
      },
    },
  ],
};

const execution: ExecutionReport = {
  itemKey: MR_KEY,
  dryRun: false,
  headMoved: false,
  calls: [
    {
      id: 'act-1',
      op: 'statuses.create',
      rule: 'policy-status',
      action: 'status',
      reason: 'the MR follows the policy',
      call: 'statuses.create policy=success',
      status: 'failed',
      detail: 'the server refused the call',
      error: `401 Unauthorized: token ${TOKEN} is not valid`,
      attempts: 1,
    },
  ],
  counts: { done: 0, skipped: 0, failed: 1, ambiguous: 0, withdrawn: 0, 'dry-run': 0 },
};

const base: Omit<Decision, 'text'> = {
  itemKey: MR_KEY,
  at: evaluation.at,
  dryRun: false,
  evaluation,
  execution,
};
export const DECISION: Decision = {
  ...base,
  text: `${decisionText(base)}\nrequest: GET /api/v3/user with token ${TOKEN}`,
};

export const RULES_STATE: RulesState = {
  loadedAt: NOW - 60 * MINUTE,
  files: ['default.yml', 'acme/web.yml'],
  problems: [RULES_PROBLEM],
  refused: true,
};

export const SWEEPS = ['rules', 'merge_watch', 'retries', 'reconcile', 'hook_check'];

/** A memory store holding one of everything the page shows. */
export async function filledStore(): Promise<StateStore> {
  let clock = NOW - 30 * MINUTE;
  const store = createMemoryStore({ now: () => clock });
  await store.open();
  await store.accept({
    key: 'delivery-1',
    kind: 'Merge Request Hook',
    receivedAt: clock,
    headers: {},
    body: { object_kind: 'merge_request' },
  });
  // It acted (its call failed): the bot records it so (rules/item/kept-decision.ts).
  await store.recordDecision(MR_KEY, DECISION, { acted: true });
  await store.watch({
    itemKey: MR_KEY,
    project: 'acme/web',
    mrId: 42,
    headSha: HEAD_SHA,
    rule: WATCH_RULE,
    required: ['ci/build', 'ci/test'],
    since: NOW - 20 * MINUTE,
  });
  // A merge queue of two: the head tested at HEAD_SHA for 5 minutes, the other behind it.
  const queued = {
    project: 'acme/web',
    projectId: 5,
    targetBranch: 'master',
    queue: 'default',
    rule: 'queue-green',
    priority: 0,
    required: ['ci/test'],
    statusTimeoutMs: 30 * MINUTE,
    maxUpdates: 3,
    updates: 1,
  };
  await store.enqueue({
    ...queued,
    itemKey: 'merge_request:5:50',
    mrId: 50,
    iid: 9,
    enqueuedAt: NOW - 10 * MINUTE,
    pinnedSha: HEAD_SHA,
    targetSha: 'b'.repeat(40),
    testingSince: NOW - 5 * MINUTE,
  });
  await store.enqueue({
    ...queued,
    itemKey: 'merge_request:5:51',
    mrId: 51,
    iid: 10,
    enqueuedAt: NOW - 9 * MINUTE,
    updates: 0,
  });
  // A merge train (depth 2) in the `train` queue of acme/api: car 1 pushed 2 minutes ago, a build
  // observed to take 3 minutes; and a merge request it took out with a comment.
  const train = {
    ...queued,
    project: 'acme/api',
    projectId: 6,
    queue: 'train',
    depth: 2,
    trainCiMs: 3 * MINUTE,
  };
  const car = {
    id: '20-aaaaaaa-1',
    position: 1,
    base: 'a'.repeat(40),
    members: ['merge_request:6:60'],
    iids: [20],
    heads: ['d'.repeat(40)],
    branch: 'hookbot/train/master/train/20',
    date: Math.floor((NOW - 2 * MINUTE) / 1000),
    identity: { name: 'hookbot', email: 'hookbot@example.com' },
    sha: TRAIN_SHA,
    pushedAt: NOW - 2 * MINUTE,
  };
  await store.enqueue({
    ...train,
    itemKey: 'merge_request:6:60',
    mrId: 60,
    iid: 20,
    enqueuedAt: NOW - 8 * MINUTE,
    updates: 0,
    car,
  });
  await store.enqueue({
    ...train,
    itemKey: 'merge_request:6:61',
    mrId: 61,
    iid: 21,
    enqueuedAt: NOW - 7 * MINUTE,
    updates: 0,
    left: { at: NOW - 4 * MINUTE, sha: 'e'.repeat(40), reason: TRAIN_REMOVAL },
  });
  await store.putAction({
    id: 'act-2',
    itemKey: 'merge_request:5:43',
    rule: 'automerge',
    call: {
      v: 1,
      project: 'acme/web',
      planned: {
        action: 'merge',
        rule: 'automerge',
        reason: 'required statuses succeeded',
        call: { op: 'mergeRequests.merge', args: { project: 5, merge_request_id: 43, sha: HEAD_SHA } },
      },
    },
  });
  clock = NOW - 10 * MINUTE;
  await store.failAction('act-2', {
    error: `405 Method Not Allowed (sent with PRIVATE-TOKEN ${TOKEN})`,
    retryable: true,
    nextTryAt: clock,
  });
  await store.parkAction('act-2', PARK_REASON);
  await store.pauseRule('close-stale', PAUSE_REASON);
  await store.setNextRun('merge_watch', undefined, NOW + 45_000);
  await store.setNextRun('rules', undefined, NOW + 50 * MINUTE);
  await store.setLastSuccess('merge_watch', NOW - 15_000);
  return store;
}

/** Deliveries as the receiver's `onOutcome` reports them. */
export function filledDeliveryLog(): DeliveryLog {
  let clock = NOW - 3 * MINUTE;
  const log = createDeliveryLog(10, () => (clock += MINUTE));
  log.record('accepted', { kind: 'merge_request', status: 202, ackMs: 3.2 });
  log.record('unauthorized', { status: 401, ackMs: 0.4 });
  return log;
}

export interface Served {
  url: string;
  close(): Promise<void>;
}

/** The status router on the ops app (as the bot mounts it), on 127.0.0.1 and a random port. */
export async function serveStatus(
  options: StatusRouterOptions,
  explain?: OpsAppOptions['explain'],
): Promise<Served> {
  const app = createOpsApp({
    ready: async () => true,
    ...(explain ? { explain } : {}),
    extend: (a) => void a.use(createStatusRouter(options)),
  });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** Everything above, with the known secrets. */
export async function serveFilled(extra: Partial<StatusRouterOptions> = {}): Promise<Served> {
  const store = await filledStore();
  const deliveries = filledDeliveryLog();
  return serveStatus({
    store,
    rules: { state: () => RULES_STATE },
    recentDeliveries: () => deliveries.list(),
    sweeps: SWEEPS,
    secrets: [TOKEN, HOOK_SECRET],
    now: () => NOW,
    ...extra,
  });
}
