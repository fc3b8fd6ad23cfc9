/**
 * The executor: the only writer through the API. It carries out an evaluation's plan, one call at
 * a time, each behind the outbox and a re-check:
 *
 * 1. `putAction` with a deterministic id (item, rule, op, args): a crash after the call leaves the
 *    entry, and whoever runs it again (the retry sweep, or the next evaluation planning the same
 *    call) finds it under the same id.
 * 2. The handler re-reads what it changes and acts only if the effect does not hold yet: labels
 *    are merged onto the CURRENT set, comments are looked for by marker, merges are pinned to the
 *    evaluated head (one file per kind of call in calls/).
 * 3. `completeAction` on done or skipped; `failAction` with backoff on a retryable failure; parked
 *    with the reason on a permanent one, or after `maxAttempts` tries.
 *
 * Every handler is safe to run twice (it re-reads and acts only when the effect does not hold yet:
 * docs/architecture.md#recipe-a-new-kind-of-api-call), which is what makes the outbox's
 * at-least-once retries harmless. Dry-run describes and calls nothing.
 */
import type { OutboxAction } from '../../state/index.ts';
import type { CompiledRuleSet } from '../engine/compile.ts';
import type { Evaluation } from '../engine/engine.ts';
import { actionIdOf, backoffMs, itemKeyOf } from './ids.ts';
import { dryRunCall, needsFreshCheck, performCall } from './calls/index.ts';
import { createItemRuns, type FleetLeases, type ItemRuns } from './lock.ts';
import { requiredStatusesOf } from './required-statuses.ts';
import {
  failed,
  skipped,
  type CallResult,
  type CallStatus,
  type ExecutorClient,
  type ExecutorLog,
  type ExecutorStore,
  type StoredCall,
} from './types.ts';
import { showCall } from '../engine/explain.ts';
import type { LabelDelta, Op, PlannedCall } from '../engine/planned-call.ts';
import type { FreshCheck } from '../item/fresh-check.ts';
import type { BotIdentity, ItemSnapshot, Trigger } from '../engine/snapshot.ts';
import { ApiError, redactSecrets } from '../../api/index.ts';

export type {
  CallResult,
  CallStatus,
  ExecutorClient,
  ExecutorLog,
  ExecutorStore,
  StoredCall,
} from './types.ts';

export interface RetryPolicy {
  /** Tries in all (the first one included) before an action is parked. Default 5. */
  maxAttempts?: number;
  /** Backoff after the first failure; doubles per failure, with jitter. Default 30 s. */
  baseDelayMs?: number;
  /** Default 30 min. */
  maxDelayMs?: number;
  /**
   * How long a fresh action stays not due while it is being carried out. If the process dies in
   * the middle, the retry sweep takes it over after this. Default 60 s.
   */
  leaseMs?: number;
}

export interface ExecutorOptions {
  client: ExecutorClient;
  store: ExecutorStore;
  /** Describe every call, make none, and leave the outbox alone. */
  dryRun?: boolean;
  log?: ExecutorLog;
  /** The clock (ms since the epoch). */
  now?: () => number;
  retry?: RetryPolicy;
  /** In [0, 1), for the backoff jitter; tests pass a fixed one. */
  random?: () => number;
  /**
   * Re-reads the item and re-evaluates it right before a merge, an arming or a cancel
   * (fresh-check.ts): the call is made only while the fresh plan still holds it, else withdrawn.
   * Without it (dry runs, offline tools) only the handlers' own re-checks apply.
   */
  freshCheck?: FreshCheck;
  /** The bot's own user: a comment's marker is looked for in its notes only. */
  bot?: BotIdentity;
  /** Several replicas on one database: one of them acts on an item at a time (lock.ts). */
  fleet?: FleetLeases;
  /**
   * One run per item (lock.ts), shared with the hook pipeline and the sweeps; each call of the
   * executor takes it too (straight through inside a run of the item). Default: one of its own,
   * over `fleet` (none in a dry run: it writes nothing, not even a lease).
   */
  runs?: ItemRuns;
  /**
   * Sees every outcome the executor gives an action, as it is settled, whichever method settled it
   * (metrics: `hookbot_rule_actions_total`, `hookbot_hook_to_action_seconds`).
   */
  onResult?: (report: CallReport) => void;
}

export interface ExecuteOptions {
  /**
   * The rule set the evaluation came from: the merge watch takes each rule's required status names
   * from its compiled conditions. Without it they are read from the evaluation's record.
   */
  rules?: CompiledRuleSet;
}

export interface CallReport extends CallResult {
  /** The outbox id (also in dry-run, where nothing is stored). */
  id: string;
  /** `unknown` only for an outbox record this version cannot read. */
  op: Op | 'unknown';
  rule: string;
  action: string;
  /** Why the engine planned it. */
  reason: string;
  /** The call in one line (`issues.update labels=[bug, ui]`). */
  call: string;
  /** Tries made so far, this one included (not in dry-run). */
  attempts?: number;
  /** Set when the action was parked now: the visible reason. */
  parked?: string;
}

export interface ExecutionReport {
  itemKey: string;
  dryRun: boolean;
  calls: CallReport[];
  /** A merge was skipped because the head moved: re-read the item and evaluate again. */
  headMoved: boolean;
  counts: Record<CallStatus, number>;
}

export interface Executor {
  readonly dryRun: boolean;
  /**
   * One item, one run at a time (lock.ts): the item processor and the sweeps run their work on an
   * item inside `runs.run(itemKey, ...)`, and every call of the executor is made inside it.
   */
  readonly runs: ItemRuns;
  execute(evaluation: Evaluation, snapshot: ItemSnapshot, options?: ExecuteOptions): Promise<ExecutionReport>;
  /**
   * Runs one stored action again, with the same re-checks (the retry sweep calls it with each of
   * `store.dueActions(now)`). Parks it, with a visible reason, once `maxAttempts` tries failed.
   */
  retryAction(action: OutboxAction): Promise<CallReport>;
  /**
   * The actions to run again at `now`: those due, and those a previous process leased and died
   * holding (see below): the retry sweep's list.
   */
  dueActions(now: number): OutboxAction[];
  /**
   * Takes a pending action out of the outbox because the item's latest evaluation no longer plans
   * it (a retry's fresh evaluation, a rule removed from the rules); the report says why.
   */
  withdrawAction(action: OutboxAction, reason: string): Promise<CallReport>;
  /**
   * Counts a try that could not even start (the fresh read before a retry failed: the server is
   * away): the action backs off as after a failed call, and is parked after `maxAttempts`.
   */
  deferAction(action: OutboxAction, error: string): Promise<CallReport>;
}

const noopLog: ExecutorLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** The plan's label delta on every label write (the engine sets it; derived from the snapshot if not). */
function labelDeltaOf(planned: PlannedCall, snapshot: ItemSnapshot): LabelDelta | undefined {
  const call = planned.call;
  if (call.op !== 'issues.update' && call.op !== 'mergeRequests.update') return undefined;
  const labels = call.args.edit.labels;
  if (labels === undefined) return undefined;
  if (call.labels) return call.labels;
  return {
    add: labels.filter((name) => !snapshot.labels.includes(name)),
    remove: snapshot.labels.filter((name) => !labels.includes(name)),
  };
}

function storedCallOf(
  planned: PlannedCall,
  snapshot: ItemSnapshot,
  evaluation: Evaluation,
  rules: CompiledRuleSet | undefined,
): StoredCall {
  const delta = labelDeltaOf(planned, snapshot);
  const normalised: PlannedCall = delta ? { ...planned, call: { ...planned.call, labels: delta } } : planned;
  const stored: StoredCall = {
    v: 1,
    planned: normalised,
    project: snapshot.project.path_with_namespace,
    trigger: keptTrigger(evaluation.trigger),
  };
  if (planned.call.op === 'mergeRequests.mergeWhenBuildSucceeds') {
    const required = requiredStatusesOf(planned.rule, 'pending', evaluation, rules);
    if (required) stored.required = required;
  }
  return stored;
}

/**
 * What of a trigger an action keeps for its re-evaluations: the events and the note's id, not
 * what the server is asked again each time (the note's text and author).
 */
function keptTrigger(trigger: Trigger): Trigger {
  const kept: Trigger = { kind: trigger.kind, byBot: trigger.byBot };
  if (trigger.action !== undefined) kept.action = trigger.action;
  if (trigger.events !== undefined) kept.events = trigger.events;
  if (trigger.noteId !== undefined) kept.noteId = trigger.noteId;
  if (trigger.schedule !== undefined) kept.schedule = trigger.schedule;
  return kept;
}

/** What the outbox holds, checked: a record from another version is parked, not guessed at. */
function readStored(call: unknown): StoredCall | undefined {
  if (call === null || typeof call !== 'object') return undefined;
  const record = call as Partial<StoredCall>;
  const planned = record.planned;
  if (record.v !== 1 || typeof record.project !== 'string' || !planned || typeof planned !== 'object')
    return undefined;
  if (
    typeof planned.call?.op !== 'string' ||
    typeof planned.call.args !== 'object' ||
    typeof planned.rule !== 'string'
  )
    return undefined;
  return record as StoredCall;
}

/** An error a handler could not resolve, as an outcome. Messages are redacted (no token). */
function resultOfError(error: unknown): CallResult {
  if (error instanceof ApiError) {
    if (error.ambiguous)
      return {
        status: 'ambiguous',
        detail: 'the server may or may not have acted; the retry re-checks before acting',
        error: error.message,
        retryable: true,
      };
    return failed(`${error.kind}${error.status ? ` (${error.status})` : ''}`, error.message, error.retryable);
  }
  // Ours (a bug): no retry will fix it; park it where people look.
  const message = error instanceof Error ? error.message : String(error);
  return failed('internal error', redactSecrets(message), false);
}

const emptyCounts = (): Record<CallStatus, number> => ({
  done: 0,
  skipped: 0,
  failed: 0,
  ambiguous: 0,
  withdrawn: 0,
  'dry-run': 0,
});

export function createExecutor(options: ExecutorOptions): Executor {
  const { client, store } = options;
  const dryRun = options.dryRun ?? false;
  const log = options.log ?? noopLog;
  const now = options.now ?? (() => Date.now());
  const maxAttempts = options.retry?.maxAttempts ?? 5;
  const leaseMs = options.retry?.leaseMs ?? 60_000;
  const backoff = {
    baseDelayMs: options.retry?.baseDelayMs ?? 30_000,
    maxDelayMs: options.retry?.maxDelayMs ?? 30 * 60_000,
    random: options.random ?? Math.random,
  };
  const lock =
    options.runs ?? createItemRuns(dryRun ? {} : { ...(options.fleet ? { fleet: options.fleet } : {}) });
  // An action is leased (made due only `leaseMs` later) while its first try runs, so the retry
  // sweep leaves it alone. A lease taken before this executor existed belongs to a process that is
  // gone (one bot per state file): nothing will finish that try, so the action is due at once
  // rather than a minute later. Retrying it is safe: every retry re-checks what already took effect.
  const startedAt = now();
  const observed = (report: CallReport): CallReport => {
    options.onResult?.(report);
    return report;
  };

  function reportOf(id: string, stored: StoredCall, result: CallResult): CallReport {
    const { planned } = stored;
    return {
      id,
      op: planned.call.op,
      rule: planned.rule,
      action: planned.action,
      reason: planned.reason,
      call: showCall(planned.call),
      ...result,
    };
  }

  function dryRunReport(id: string, stored: StoredCall, itemKey?: string): CallReport {
    // What the store alone says the call comes to (the queue's memory), as the bot would say it.
    const known = itemKey === undefined ? undefined : dryRunCall(store, itemKey, stored.planned.call);
    return reportOf(
      id,
      stored,
      known ?? { status: 'dry-run', detail: `would call ${showCall(stored.planned.call)}` },
    );
  }

  /** Records the outcome in the outbox; the report says what became of the action. */
  async function settle(
    id: string,
    itemKey: string,
    stored: StoredCall,
    result: CallResult,
  ): Promise<CallReport> {
    const report = reportOf(id, stored, result);
    const context = { itemKey, actionId: id, op: report.op, rule: report.rule, status: result.status };
    if (result.status === 'done' || result.status === 'skipped') {
      await store.completeAction(id);
      log.info({ ...context, detail: result.detail }, `call ${result.status}`);
      return report;
    }
    const error = result.error ?? result.detail;
    const attempts = (store.getAction(id)?.attempts ?? 0) + 1;
    report.attempts = attempts;
    if (!result.retryable) {
      await store.failAction(id, { error, retryable: false });
      report.parked = error;
      log.error({ ...context, attempts, err: error }, 'call failed for good; action parked');
      return report;
    }
    const nextTryAt = now() + backoffMs(attempts, backoff);
    await store.failAction(id, { error, retryable: true, nextTryAt });
    if (attempts >= maxAttempts) {
      const reason = `gave up after ${attempts} attempts; last error: ${error}`;
      await store.parkAction(id, reason);
      report.parked = reason;
      log.error({ ...context, attempts, err: error }, 'call kept failing; action parked');
      return report;
    }
    log.warn({ ...context, attempts, nextTryAt, err: error }, 'call failed; will retry');
    return report;
  }

  async function attempt(id: string, itemKey: string, stored: StoredCall): Promise<CallReport> {
    let result: CallResult;
    try {
      const verdict =
        // A disarm is the bot taking back its own arming (rules/item/disarm.ts): no rule plans it,
        // and nothing may stop it.
        options.freshCheck && needsFreshCheck(stored.planned.call.op) && stored.origin !== 'disarm'
          ? await options.freshCheck(itemKey, stored)
          : undefined;
      if (verdict && !verdict.planned) return await withdraw(id, itemKey, stored, verdict.reason);
      result = await performCall({
        client,
        store,
        itemKey,
        stored,
        now,
        log,
        ...(options.bot ? { bot: options.bot } : {}),
        ...(verdict?.planned ? { fresh: verdict.snapshot } : {}),
      });
    } catch (error) {
      result = resultOfError(error);
    }
    return settle(id, itemKey, stored, result);
  }

  /** The latest evaluation no longer plans the action: it leaves the outbox, with the reason. */
  async function withdraw(
    id: string,
    itemKey: string,
    stored: StoredCall,
    reason: string,
  ): Promise<CallReport> {
    await store.completeAction(id);
    log.info(
      { itemKey, actionId: id, op: stored.planned.call.op, rule: stored.planned.rule, reason },
      'action withdrawn',
    );
    return reportOf(id, stored, { status: 'withdrawn', detail: `withdrawn: ${reason}` });
  }

  async function runFresh(id: string, itemKey: string, stored: StoredCall): Promise<CallReport> {
    // A parked action planned again by a fresh evaluation starts over: the world may have changed
    // (the user now exists, the permission was granted). A pending one keeps its count of tries.
    if (store.getAction(id)?.parked) await store.completeAction(id);
    await store.putAction({
      id,
      itemKey,
      rule: stored.planned.rule,
      call: stored,
      nextTryAt: now() + leaseMs,
    });
    return attempt(id, itemKey, stored);
  }

  const executor: Executor = {
    dryRun,
    runs: lock,

    dueActions(at) {
      const due = store.dueActions(at);
      const orphaned = store
        .dueActions(at + leaseMs)
        .filter(
          (action) =>
            action.nextTryAt > at &&
            action.attempts === 0 &&
            action.lastError === undefined &&
            action.nextTryAt - leaseMs < startedAt,
        );
      return orphaned.length === 0 ? due : [...due, ...orphaned];
    },

    async execute(evaluation, snapshot, executeOptions = {}) {
      const itemKey = itemKeyOf(snapshot.kind, snapshot.project.id, snapshot.id);
      const calls: CallReport[] = [];
      // In order: the engine orders the plan (labels first, the merge after the statuses it posts).
      for (const planned of evaluation.plan) {
        const stored = storedCallOf(planned, snapshot, evaluation, executeOptions.rules);
        const id = actionIdOf(itemKey, planned.rule, stored.planned.call);
        calls.push(
          observed(
            dryRun
              ? dryRunReport(id, stored, itemKey)
              : await lock.run(itemKey, () => runFresh(id, itemKey, stored)),
          ),
        );
      }
      const counts = emptyCounts();
      for (const call of calls) counts[call.status]++;
      return { itemKey, dryRun, calls, headMoved: calls.some((call) => call.headMoved === true), counts };
    },

    withdrawAction(action, reason) {
      const stored = readStored(action.call);
      if (dryRun)
        return Promise.resolve(
          stored
            ? reportOf(action.id, stored, { status: 'dry-run', detail: `would withdraw: ${reason}` })
            : unreadableReport(action, { status: 'dry-run', detail: `would withdraw: ${reason}` }),
        );
      return lock.run(action.itemKey, async () => {
        if (!stored) {
          await store.completeAction(action.id);
          return unreadableReport(action, { status: 'withdrawn', detail: `withdrawn: ${reason}` });
        }
        return withdraw(action.id, action.itemKey, stored, reason);
      });
    },

    deferAction(action, error) {
      const stored = readStored(action.call);
      const result = failed('could not re-read the item to re-evaluate it', error, true);
      if (dryRun || !stored) return Promise.resolve(unreadableReport(action, result));
      return lock.run(action.itemKey, async () => {
        if (!store.getAction(action.id)) return reportOf(action.id, stored, skipped('completed meanwhile'));
        return settle(action.id, action.itemKey, stored, result);
      });
    },

    async retryAction(action) {
      const stored = readStored(action.call);
      if (dryRun) {
        return stored
          ? dryRunReport(action.id, stored)
          : unreadableReport(action, failed('unreadable', 'the stored call cannot be read', false));
      }
      return lock.run(action.itemKey, async () => {
        const current = store.getAction(action.id);
        const readable = readStored(current?.call);
        if (!current || current.parked) {
          const result: CallResult = {
            status: 'skipped',
            detail: current ? 'parked meanwhile' : 'completed meanwhile',
          };
          return readable ? reportOf(action.id, readable, result) : unreadableReport(action, result);
        }
        if (!readable) {
          const reason = 'the stored call cannot be read (written by another version?)';
          await store.parkAction(action.id, reason);
          log.error({ itemKey: action.itemKey, actionId: action.id }, 'unreadable outbox action parked');
          return unreadableReport(action, failed('unreadable', reason, false), reason);
        }
        if (current.attempts >= maxAttempts) {
          const last = current.lastError ?? 'unknown';
          const reason = `gave up after ${current.attempts} attempts; last error: ${last}`;
          await store.parkAction(action.id, reason);
          return {
            ...reportOf(action.id, readable, failed('too many attempts', reason, false)),
            parked: reason,
          };
        }
        return attempt(action.id, action.itemKey, readable);
      });
    },
  };
  // Every outcome passes `observed` once, whichever method settled it (`execute` does so per call).
  return {
    ...executor,
    withdrawAction: (action, reason) => executor.withdrawAction(action, reason).then(observed),
    deferAction: (action, error) => executor.deferAction(action, error).then(observed),
    retryAction: (action) => executor.retryAction(action).then(observed),
  };
}

function unreadableReport(action: OutboxAction, result: CallResult, parked?: string): CallReport {
  return {
    id: action.id,
    op: 'unknown',
    rule: action.rule,
    action: 'unknown',
    reason: '',
    call: '(unreadable)',
    ...result,
    ...(parked ? { parked } : {}),
  };
}
