/**
 * Everything the status page shows, read at once from the store, the rules holder and the delivery
 * log into one plain object: the HTML page and `/status.json` render the same data. Secrets are
 * removed here, once, from every string of the result (redact.ts), so neither renderer can leak
 * one by forgetting a field; and no configuration value is read at all.
 */
import { redactValue, secretMatcher } from '../ops/index.ts';
import { queueKeyOf, queuePosition, queuesOf, trainEstimates } from '../state/index.ts';
import type { Fleet, ParkedDelivery, ReplicaView, StateStats, StateStore } from '../state/index.ts';
import {
  actionViews,
  decisionView,
  explainLink,
  explainTargetOf,
  parkedView,
  type ActionView,
  type DecisionView,
  type ParkedView,
} from './decision-view.ts';
import type { DeliveryInfo } from './delivery-log.ts';
import { collectQueues, type QueueControlView, type QueuePageData } from './queue-data.ts';
import { echoPauseOf, pauseReason, type RepositoryRulesState, type RulesState } from '../rules/index.ts';

export type StatusStore = Pick<
  StateStore,
  | 'pendingDeliveries'
  | 'recentDecisions'
  | 'latestDecision'
  | 'watched'
  | 'listParked'
  | 'pausedRules'
  | 'nextRun'
  | 'lastSuccess'
  | 'stats'
> &
  Partial<Pick<StateStore, 'queued' | 'parkedDeliveries'>> & {
    /** The queues' control records (a paused queue), in a store that keeps them. */
    queueControls?: () => readonly QueueControlView[];
  };

export interface StatusSources {
  store: StatusStore;
  /** Several replicas sharing the state (PostgreSQL): the page shows the whole fleet. */
  fleet?: Pick<Fleet, 'replicaId' | 'replicas' | 'fleetInbox'>;
  rules: { state(): RulesState };
  /** Repository rules (each project's .hookbot.yml), when they are on. */
  repositoryRules?: () => RepositoryRulesState[];
  recentDeliveries?: () => DeliveryInfo[];
  /** Sweep names whose next run the store keeps (`rules`, `merge_watch`, `retries`...). */
  sweeps: readonly string[];
  /** Known secret values (API token, hook secrets, the status password): never shown. */
  secrets?: readonly (string | undefined)[];
  /** Decisions shown, newest first. Default 25. */
  decisionLimit?: number;
  now?: () => number;
}

export interface WatchView {
  itemKey: string;
  project: string;
  /** The global id (v3 API paths use it, not the iid). */
  mrId: number;
  rule: string;
  headSha: string;
  /** Status names that must succeed on `headSha` before the merge. */
  required: string[];
  since: number;
  /** Explain's answer for the decision in which its rule armed it (`?rule=<rule>`). */
  explain?: string;
}

/** A merge request in a merge queue (docs/merge-queue.md), in queue order. */
export interface QueueView {
  itemKey: string;
  project: string;
  iid: number;
  targetBranch: string;
  queue: string;
  /** 1 for the head of its queue. */
  position: number;
  /** `position 2 of 4 ...; waiting for ci/test on 3f2a1c9`. */
  state: string;
  rule: string;
  /** Explain's answer for the decision in which its rule queued it (`?rule=<rule>`). */
  explain?: string;
  /** In a merge train: the car it rides in (docs/merge-queue.md#merge-trains). */
  car?: {
    position: number;
    iids: number[];
    branch: string;
    sha?: string;
    /** The statuses the car waits for, and since when (its push). */
    waitingFor: string[];
    since?: number;
    landing?: number;
  };
  /** In a merge train: when it may land (ms since the epoch), from the last observed build time. */
  estimatedLandAt?: number;
  /** An operator moved it to the front of its queue (docs/merge-queue.md#steering-the-queue). */
  front?: { by: string; at: number };
  /** Its queue is paused by an operator: nothing lands until it is resumed. */
  paused?: { by: string; reason: string; at: number };
}

/** A merge request a queue took out with a comment (remembered at the head it left at). */
export interface QueueRemovalView {
  itemKey: string;
  project: string;
  iid: number;
  targetBranch: string;
  queue: string;
  at: number;
  sha: string;
  reason: string;
}

export interface SweepView {
  name: string;
  nextRun?: number;
  lastSuccess?: number;
}

export interface StatusData {
  /** When this was read (ms since the epoch). */
  now: number;
  deliveries: {
    recent: DeliveryInfo[];
    /** Accepted, not processed yet. */
    pending: number;
    oldestPendingAt?: number;
  };
  decisions: DecisionView[];
  /**
   * The actions the recent decisions sent, withdrew or parked, newest first, each with the decision
   * that reported it (the ring of recent decisions: the echoes of the bot's own changes are
   * decisions that did nothing, and have no action here).
   */
  actions: ActionView[];
  mergeWatch: WatchView[];
  mergeQueue: QueueView[];
  /**
   * The merge queues in short, for the link at the top of the page to their own page
   * (`/status/queue`): how many queues and merge requests, and the queues that cannot move
   * (`project → target · queue`) or are paused.
   */
  queueSummary: { queues: number; queued: number; stuck: string[]; paused: string[] };
  /** The last merge requests taken out of a queue with a comment, latest first (at most 10). */
  queueRemovals: QueueRemovalView[];
  parked: ParkedView[];
  /** Deliveries set aside unprocessed: processes kept dying on them (issue 28). */
  parkedDeliveries: ParkedDelivery[];
  /**
   * Rules held by a brake: the circuit breaker of scheduled rules (every project), or the echo
   * brake of a rule that kept writing after the bot's own changes (`project`: in that project).
   */
  pausedRules: { rule: string; reason: string; at: number; project?: string }[];
  sweeps: SweepView[];
  rules: RulesState;
  /** Projects with a .hookbot.yml, when repository rules are on. */
  repositoryRules?: RepositoryRulesState[];
  stats: StateStats;
  /**
   * With PostgreSQL: this replica's name, the deliveries pending in the whole fleet (`deliveries`
   * counts this replica's), and every replica with what it holds; `error` when the database did
   * not answer.
   */
  fleet?: { replica: string; pending?: number; replicas?: ReplicaView[]; error?: string };
}

/** The fleet part of the status (an async read of the database); undefined with one instance. */
export async function collectFleet(sources: StatusSources): Promise<StatusData['fleet']> {
  const { fleet } = sources;
  if (fleet === undefined) return undefined;
  try {
    const [pending, replicas] = await Promise.all([fleet.fleetInbox(), fleet.replicas()]);
    return { replica: fleet.replicaId, pending, replicas };
  } catch (error) {
    return {
      replica: fleet.replicaId,
      error: `the state database did not answer: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

export const DEFAULT_DECISION_LIMIT = 25;

export function collectStatus(sources: StatusSources, fleet?: StatusData['fleet']): StatusData {
  const { store } = sources;
  const now = (sources.now ?? Date.now)();
  // Not `pending()`: that parses every pending body, and a backlog may be tens of megabytes.
  const pending = store.pendingDeliveries();
  const oldest = pending[0];
  const limit = sources.decisionLimit ?? DEFAULT_DECISION_LIMIT;
  // Links to explain, for the items explain has a decision of (it answers from those only).
  const target = (itemKey: string) => explainTargetOf(store.latestDecision(itemKey));
  const withLink = (itemKey: string, query: Record<string, string>) => {
    const item = target(itemKey);
    return item ? { explain: explainLink(item, query) } : {};
  };
  const data: StatusData = {
    now,
    deliveries: {
      recent: sources.recentDeliveries?.() ?? [],
      pending: pending.length,
      ...(oldest ? { oldestPendingAt: oldest.receivedAt } : {}),
    },
    decisions: store.recentDecisions(limit).map((record) => decisionView(record)),
    actions: actionViews(store.recentDecisions(), limit),
    mergeWatch: store
      .watched()
      .map(({ itemKey, project, mrId, rule, headSha, required, since }) => ({
        itemKey,
        project,
        mrId,
        rule,
        headSha,
        required: [...required],
        since,
        ...withLink(itemKey, { rule }),
      }))
      .sort((a, b) => a.since - b.since),
    mergeQueue: queueViews(store.queued?.() ?? [], now, store.queueControls?.() ?? []).map((view) => ({
      ...view,
      ...withLink(view.itemKey, { rule: view.rule }),
    })),
    queueSummary: queueSummary(store.queued?.() ?? [], store.queueControls?.() ?? []),
    queueRemovals: (store.queued?.() ?? [])
      .flatMap((entry) =>
        entry.left
          ? [
              {
                itemKey: entry.itemKey,
                project: entry.project,
                iid: entry.iid,
                targetBranch: entry.targetBranch,
                queue: entry.queue,
                at: entry.left.at,
                sha: entry.left.sha,
                reason: entry.left.reason,
              },
            ]
          : [],
      )
      .sort((a, b) => b.at - a.at)
      .slice(0, 10),
    parked: store.listParked().map((action) => parkedView(action, target(action.itemKey))),
    parkedDeliveries: store.parkedDeliveries?.() ?? [],
    pausedRules: store.pausedRules().map((paused) => {
      const echo = echoPauseOf(paused);
      const reason = pauseReason(paused);
      return echo
        ? { rule: echo.rule, project: echo.project, reason, at: paused.at }
        : { rule: paused.rule, reason, at: paused.at };
    }),
    sweeps: sources.sweeps.map((name) => {
      const sweep: SweepView = { name };
      const next = store.nextRun(name);
      const last = store.lastSuccess(name);
      if (next !== undefined) sweep.nextRun = next;
      if (last !== undefined) sweep.lastSuccess = last;
      return sweep;
    }),
    rules: sources.rules.state(),
    ...(sources.repositoryRules ? { repositoryRules: sources.repositoryRules() } : {}),
    stats: store.stats(),
    ...(fleet === undefined ? {} : { fleet }),
  };
  const secrets = (sources.secrets ?? []).filter((secret): secret is string => !!secret);
  // redactValue copies (the store's own objects, read-only per state/store.ts, are never changed) and
  // keeps the shape: strings stay strings, and no key of StatusData is secret-named, so the cast holds.
  return redactValue(data, secretMatcher(secrets)) as StatusData;
}

function queueViews(
  entries: ReturnType<StateStore['queued']>,
  now: number,
  controls: readonly QueueControlView[],
): QueueView[] {
  return [...queuesOf(entries).entries()].flatMap(([key, group]) => {
    const estimates = trainEstimates(group, now);
    const paused = controls.find((c) => queueKeyOf(c.project, c.targetBranch, c.queue) === key)?.paused;
    return group.map((entry, index) => {
      const view: QueueView = {
        itemKey: entry.itemKey,
        project: entry.project,
        iid: entry.iid,
        targetBranch: entry.targetBranch,
        queue: entry.queue,
        position: index + 1,
        state: queuePosition(entries, entry.itemKey, now, controls) ?? '',
        rule: entry.rule,
        ...(entry.front ? { front: entry.front } : {}),
        ...(paused ? { paused } : {}),
      };
      const car = entry.car;
      if (car)
        view.car = {
          position: car.position,
          iids: [...car.iids],
          branch: car.branch,
          ...(car.sha ? { sha: car.sha } : {}),
          // A car waits for what every merge request it carries requires (docs/merge-queue.md#merge-trains);
          // landing, or seen passed (it waits for the cars ahead), it waits for no status.
          waitingFor:
            car.landing !== undefined || car.checked?.state === 'passed'
              ? []
              : [...new Set(group.filter((e) => e.car?.id === car.id).flatMap((e) => e.required))],
          ...(car.pushedAt !== undefined ? { since: car.pushedAt } : {}),
          ...(car.landing !== undefined ? { landing: car.landing } : {}),
        };
      const eta = estimates.get(entry.itemKey);
      if (eta !== undefined) view.estimatedLandAt = eta;
      return view;
    });
  });
}

/** The queue page's data (`/status/queue`, `/status/queue.json`), redacted as the status page's. */
export function collectQueuePage(sources: StatusSources): QueuePageData {
  const { store } = sources;
  const now = (sources.now ?? Date.now)();
  const data = collectQueues({
    entries: store.queued?.() ?? [],
    ...(store.queueControls ? { controls: store.queueControls() } : {}),
    itemOf: (itemKey) => {
      const record = store.latestDecision(itemKey);
      if (!record) return {};
      const title = decisionView(record).item?.title;
      const target = explainTargetOf(record);
      return { ...(title ? { title } : {}), ...(target ? { explain: explainLink(target) } : {}) };
    },
    now,
  });
  const secrets = (sources.secrets ?? []).filter((secret): secret is string => !!secret);
  return redactValue(data, secretMatcher(secrets)) as QueuePageData;
}

function queueSummary(
  entries: ReturnType<StateStore['queued']>,
  controls: readonly QueueControlView[],
): StatusData['queueSummary'] {
  const groups = [...queuesOf(entries).values()];
  const name = (e: { project: string; targetBranch: string; queue: string }) =>
    `${e.project} → ${e.targetBranch} · ${e.queue}`;
  return {
    queues: groups.length,
    queued: groups.reduce((sum, group) => sum + group.length, 0),
    stuck: groups.filter((group) => group.some((e) => e.trouble)).map((group) => name(group[0]!)),
    paused: controls.filter((c) => c.paused).map(name),
  };
}
