/**
 * The pipeline's item processor (receiver/pipeline.ts `ItemProcessor`): for each trigger, read the
 * item fresh, evaluate the project's rules, carry out the plan, and record the decision for
 * explain. A hook is a hint, never the truth: nothing here reads the payload.
 *
 * - Loop prevention, cheaply: an event the bot caused (its own comment fires Note Hook too,
 *   docs/server-behaviour.md#hook-payloads) is dropped before the item is read when no rule of the project allows bot
 *   events. Only the project's path is needed for that (cached by the reader).
 * - A merge skipped because the head moved between evaluation and execution is evaluated once
 *   more on a fresh read: the new head gets its own verdict (usually: wait for its statuses).
 * - Transient API errors while reading are thrown, so the pipeline retries the item. Failed calls
 *   of the plan are not: they are in the outbox, and the retry sweep owns them.
 */
import type { CompiledRuleSet } from '../engine/compile.ts';
import { evaluate, type Evaluation } from '../engine/engine.ts';
import { itemKeyOf } from '../executor/ids.ts';
import type { ExecutorLog } from '../executor/types.ts';
import type { CallReport, ExecutionReport, Executor, StoredCall } from '../executor/executor.ts';
import { ANY_EVENT, itemAddressOf, withdrawalReason } from './fresh-check.ts';
import { canonicalJson } from '../executor/ids.ts';
import { isSweepAction, withdrawUnplanned } from './withdraw.ts';
import { disarmIfOutgrown } from './disarm.ts';
import { decisionActed } from './kept-decision.ts';
import { createEchoBrake, type EchoBrake } from './echo-brake.ts';
import type { BrakeStore } from './brake.ts';
import { explainText } from '../engine/explain.ts';
import {
  createSnapshotReader,
  type ItemAddress,
  type SnapshotClient,
  type SnapshotReader,
} from './read-snapshot.ts';
import type { ItemSnapshot, Trigger } from '../engine/snapshot.ts';
import type { OutboxAction, StateStore } from '../../state/index.ts';
import type { QueueMetricsSink } from '../queue/queue-events.ts';

export interface ProjectRules {
  /** The rules of a project by `namespace/project`. */
  forProject(pathWithNamespace: string): CompiledRuleSet;
  /**
   * Makes the project's rules ready before `forProject` (repository rules: its `.hookbot.yml` is
   * read the first time). Throwing a transient error retries the item.
   */
  prepare?(pathWithNamespace: string): Promise<void>;
  /** Reads what the project's rules come from again (the reconcile sweep). */
  refresh?(pathWithNamespace: string): Promise<void>;
}

export interface ItemProcessorOptions {
  /** Reads items (used to build the default reader). */
  client: SnapshotClient;
  /** Decisions are recorded; the outbox is read to withdraw what the latest evaluation no longer plans. */
  store: Pick<StateStore, 'recordDecision'> &
    Partial<
      Pick<
        StateStore,
        'dueActions' | 'listParked' | 'queued' | 'dequeue' | 'watched' | 'putAction' | 'getAction'
      >
    >;
  rules: ProjectRules;
  executor: Executor;
  reader?: SnapshotReader;
  /** The clock (ms since the epoch) of evaluations. */
  now?: () => number;
  log?: ExecutorLog;
  /**
   * Bounds the writes a rule makes after the bot's own changes (echo-brake.ts); shared by the hook
   * processor and the sweeps'. Default: one of its own over `store` when the store keeps pauses.
   */
  brake?: EchoBrake;
  /** The duration of each evaluation by the engine, in seconds (`hookbot_evaluation_seconds`). */
  onEvaluated?: (seconds: number) => void;
  /** Counts a merge request its rule took out of its queue (`hookbot_merge_queue_removed_total`). */
  queueMetrics?: Pick<QueueMetricsSink, 'removed'>;
}

/** What explain shows for an item: the evaluation, what became of each call, and a text for people. */
export interface Decision {
  itemKey: string;
  /** When the decision was made (ISO 8601). */
  at: string;
  dryRun: boolean;
  evaluation: Evaluation;
  execution: ExecutionReport;
  /** The first round, when a merge found the head moved and the item was evaluated again. */
  superseded?: { reason: string; item: Evaluation['item']; at: string; execution: ExecutionReport };
  /** Set when this evaluation took the item out of its merge queue: why (docs/merge-queue.md). */
  leftQueue?: string;
  /** The whole decision in words: conditions, verdicts, plan, and each call's outcome. */
  text: string;
}

export type ItemProcessorFn = (item: ItemAddress, triggers: Trigger[]) => Promise<void>;

/**
 * Retries outbox actions of one item by evaluating it again (the retry sweep): each action's
 * trigger on a fresh read, with the rules in force now. What the fresh plan still holds is carried
 * out (the same action, under its id, keeps its count of tries); what it no longer holds is
 * withdrawn with the reason. A sweep's action (withdraw.ts `isSweepAction`) is no rule's plan: it is
 * retried as stored, behind its own gate. The reports of the actions, in their order.
 */
export type ItemRetryFn = (itemKey: string, actions: readonly OutboxAction[]) => Promise<CallReport[]>;

const isBrakeStore = (store: object): store is BrakeStore =>
  ['pausedRules', 'pauseRule', 'approveRule', 'lastSuccess', 'setLastSuccess'].every(
    (name) => typeof (store as Record<string, unknown>)[name] === 'function',
  );

const noopLog: ExecutorLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

function executionLines(execution: ExecutionReport): string[] {
  if (execution.calls.length === 0) return ['execution: nothing to do'];
  return [
    `execution${execution.dryRun ? ' (dry run: no call made)' : ''}:`,
    ...execution.calls.map((call, index) => {
      const error = call.error && call.error !== call.detail ? ` (${call.error})` : '';
      const parked = call.parked ? ` [parked: ${call.parked}]` : '';
      if (call.status === 'withdrawn') return `  ${index + 1}. ${call.detail} (${call.call})`;
      return `  ${index + 1}. ${call.status}: ${call.call}: ${call.detail}${error}${parked}`;
    }),
  ];
}

const shortHead = (sha: string | null | undefined): string => sha?.slice(0, 8) ?? 'unknown';

export function decisionText(decision: Omit<Decision, 'text'>): string {
  const lines = [explainText(decision.evaluation), '', ...executionLines(decision.execution)];
  if (decision.leftQueue) lines.push('', `merge queue: ${decision.leftQueue}`);
  if (decision.superseded) {
    const first = decision.superseded;
    lines.push(
      '',
      `evaluated again: ${first.reason} (first evaluation at ${first.at}, head ${shortHead(first.item.sha)})`,
      ...executionLines(first.execution).map((line) => `  ${line}`),
    );
  }
  return lines.join('\n');
}

export function createItemProcessor(options: ItemProcessorOptions): ItemProcessorFn & { retry: ItemRetryFn } {
  const { store, rules, executor } = options;
  const reader = options.reader ?? createSnapshotReader(options.client);
  const now = options.now ?? (() => Date.now());
  const log = options.log ?? noopLog;

  const brake = options.brake ?? (isBrakeStore(store) ? createEchoBrake({ store, now, log }) : undefined);

  /**
   * Evaluates and acts. Rules the echo brake holds do not run; an evaluation caused only by the
   * bot's own events that would take a rule past its bound pauses that rule first, and is made again
   * without it (explain then says why). What such an evaluation wrote is counted.
   */
  async function round(
    set: CompiledRuleSet,
    snapshot: ItemSnapshot,
    itemKey: string,
  ): Promise<{ evaluation: Evaluation; execution: ExecutionReport }> {
    const dryRun = executor.dryRun;
    const paused = brake
      ? await brake.paused(snapshot.project.path_with_namespace, set.rules, dryRun)
      : undefined;
    // hookbot_evaluation_seconds: the engine's work only (a trip's re-evaluation included), not the
    // brake's reads and writes of the store.
    const timed = (paused?: ReadonlyMap<string, string>) => {
      const from = performance.now();
      const result = evaluate(set, snapshot, { now: now(), ...(paused?.size ? { paused } : {}) });
      options.onEvaluated?.((performance.now() - from) / 1000);
      return result;
    };
    let evaluation = timed(paused);
    const tripped = brake ? await brake.trip(itemKey, evaluation, set.rules, dryRun) : undefined;
    if (tripped?.size) evaluation = timed(new Map([...(paused ?? []), ...tripped]));
    const execution = await executor.execute(evaluation, snapshot, { rules: set });
    brake?.record(itemKey, evaluation, execution, set.rules);
    return { evaluation, execution };
  }

  function disarm(itemKey: string, snapshot: ItemSnapshot) {
    const { watched, putAction, getAction } = store;
    if (snapshot.kind !== 'merge_request' || !watched || !putAction || !getAction) return undefined;
    return disarmIfOutgrown(
      {
        store: {
          watched: watched.bind(store),
          putAction: putAction.bind(store),
          getAction: getAction.bind(store),
        },
        executor,
        now,
      },
      itemKey,
      snapshot.project.path_with_namespace,
      { ...snapshot, project_id: snapshot.project.id },
    );
  }

  /**
   * One evaluation of the item on a fresh read, its plan carried out, the item's pending actions
   * that this evaluation judged and no longer plans withdrawn, and the decision recorded. Returns
   * the execution (undefined when nothing was evaluated), so a retry can find its actions in it.
   */
  async function evaluateItem(item: ItemAddress, given: Trigger): Promise<ExecutionReport | undefined> {
    const itemKey = itemKeyOf(item.type, item.projectId, item.id);
    const project = await reader.projectOf(item.projectId);
    await rules.prepare?.(project.path_with_namespace);
    const set = rules.forProject(project.path_with_namespace);
    if (set.rules.length === 0) {
      log.info({ itemKey, project: project.path_with_namespace }, 'no rules for this project');
      return undefined;
    }
    if (given.byBot && !set.rules.some((rule) => rule.allowBot)) {
      // Not recorded as a decision: it would hide the last real one from explain.
      log.info(
        { itemKey, trigger: given.kind },
        'event caused by the bot and no rule allows bot events: skipped',
      );
      return undefined;
    }
    // A note is what the server says it is (text, author), read by its id; one it does not have
    // never happened (a forged or stale delivery) and causes nothing.
    const trigger = await reader.confirm(item, given, set.needs);
    if (!trigger) {
      log.warn(
        { itemKey, noteId: given.noteId },
        'the note of this event is not on the server: event dropped',
      );
      return undefined;
    }
    if (trigger.byBot && !set.rules.some((rule) => rule.allowBot)) {
      log.info(
        { itemKey, trigger: trigger.kind },
        'note written by the bot and no rule allows bot events: skipped',
      );
      return undefined;
    }
    let snapshot = await reader.read(item, trigger, set.needs);
    if (!snapshot) {
      log.info({ itemKey }, 'item is gone (404): nothing to evaluate');
      return undefined;
    }
    // The server's merge the bot armed, at another head or target now (a close, push and reopen; a
    // retarget): cancelled first, and the rules judge the merge request as it is (disarm.ts).
    const disarmed = await disarm(itemKey, snapshot);
    if (disarmed?.status === 'done') snapshot = (await reader.read(item, trigger, set.needs)) ?? snapshot;
    let { evaluation, execution } = await round(set, snapshot, itemKey);
    if (disarmed) execution = { ...execution, calls: [disarmed, ...execution.calls] };
    let superseded: Decision['superseded'];
    if (execution.headMoved) {
      const reason = 'a merge was skipped because the head moved';
      log.info({ itemKey, evaluatedSha: evaluation.item.sha }, `${reason}: evaluating again`);
      const fresh = await reader.read(item, trigger, set.needs);
      if (fresh) {
        superseded = { reason, item: evaluation.item, at: evaluation.at, execution };
        ({ evaluation, execution } = await round(set, fresh, itemKey));
      }
    }
    if (store.dueActions && store.listParked) {
      const planned = new Set(execution.calls.map((call) => call.id));
      const withdrawn = await withdrawUnplanned(
        { dueActions: store.dueActions.bind(store), listParked: store.listParked.bind(store) },
        executor,
        evaluation,
        itemKey,
        planned,
      );
      if (withdrawn.length > 0) {
        execution = { ...execution, calls: [...execution.calls, ...withdrawn] };
        execution.counts = { ...execution.counts, withdrawn: execution.counts.withdrawn + withdrawn.length };
      }
    }
    const leftQueue = executor.dryRun ? undefined : await leaveQueue(itemKey, evaluation);
    // A member's `/hookbot dequeue` (the `dequeue` action): this decision tells it; the metric counts it.
    for (const call of execution.calls)
      if (call.op === 'mergeQueue.dequeue' && call.status === 'done')
        options.queueMetrics?.removed('dequeue_command');
    const decision: Omit<Decision, 'text'> = {
      itemKey,
      at: new Date(now()).toISOString(),
      dryRun: executor.dryRun,
      evaluation,
      execution,
      ...(superseded ? { superseded } : {}),
      ...(leftQueue ? { leftQueue } : {}),
    };
    // Every evaluation is recorded; one that acted is kept apart from the echoes (kept-decision.ts).
    await store.recordDecision(
      itemKey,
      { ...decision, text: decisionText(decision) },
      { acted: decisionActed(decision) },
    );
    log.info(
      {
        itemKey,
        event: evaluation.event,
        matched: evaluation.rules.filter((rule) => rule.matched).map((rule) => rule.rule),
        ...execution.counts,
      },
      'item evaluated',
    );
    return execution;
  }

  /**
   * A queued merge request leaves its queue at once when the rule that queued it applied to this
   * event and no longer plans the queue (it stopped matching: relabelled, closed, work in progress),
   * or is gone from the rules. An event the rule does not listen to says nothing, and neither does
   * any event but the comment that queued it, for one queued on a member's comment.
   */
  async function leaveQueue(itemKey: string, evaluation: Evaluation): Promise<string | undefined> {
    const held = store.queued?.().find((entry) => entry.itemKey === itemKey);
    if (!held || !store.dequeue) return undefined;
    if (evaluation.plan.some((planned) => planned.call.op === 'mergeQueue.enqueue')) return undefined;
    const record = evaluation.rules.find((one) => one.rule === held.rule);
    if (record && !record.applies) return undefined;
    // Queued on a member's comment: an evaluation of another event (another comment, a label
    // change) says nothing about that comment, which is judged again on a fresh read before the
    // merge (fresh-check.ts replays it). Closed or pushed, the queue takes it out itself.
    const trigger = evaluation.trigger;
    if (record && held.trigger && !(trigger.kind === 'note' && trigger.noteId === held.trigger.noteId))
      return undefined;
    await store.dequeue(itemKey);
    // Taken out earlier with a comment: the memory of it goes, so the rule matching anew lets it in.
    if (held.left) return undefined;
    options.queueMetrics?.removed('rule_stopped');
    const why = `left the ${held.queue} queue for ${held.targetBranch}: ${withdrawalReason(evaluation, held.rule, 'queue')}`;
    log.info({ itemKey, queue: held.queue }, why);
    return why;
  }

  const processItem: ItemProcessorFn & { retry: ItemRetryFn } = Object.assign(
    (item: ItemAddress, triggers: Trigger[]) =>
      // One run of the item at a time (executor/lock.ts): a hook run, a sweep's, another replica's.
      executor.runs.run(itemKeyOf(item.type, item.projectId, item.id), async () => {
        // Triggers in order, each on a fresh read: a note command must see the state the one before left.
        for (const trigger of triggers) await evaluateItem(item, trigger);
      }),
    {
      retry: (itemKey: string, actions: readonly OutboxAction[]): Promise<CallReport[]> =>
        executor.runs.run(itemKey, () => retryItem(itemKey, actions)),
    },
  );
  return processItem;

  /**
   * A sweep's action, retried as stored; a queue's removal comment only while the entry is marked as
   * left (a process killed before that write: the queue's next run judges the merge request again).
   */
  function retrySweep(action: OutboxAction): Promise<CallReport> {
    const exit = (action.call as Partial<StoredCall> | null)?.queueExit === true;
    if (exit && !store.queued?.().some((entry) => entry.itemKey === action.itemKey && entry.left))
      return executor.withdrawAction(
        action,
        'the merge queue did not take it out (its run stopped first): its next run judges it again',
      );
    return executor.retryAction(action);
  }

  async function retryItem(itemKey: string, actions: readonly OutboxAction[]): Promise<CallReport[]> {
    const item = itemAddressOf(itemKey);
    const reports = new Map<string, CallReport>();
    // A sweep's action (a queue's removal comment left by a process killed after it decided) is no
    // rule's plan: retried as stored, behind its own gate (the fresh check before a merge).
    for (const action of actions) if (isSweepAction(action)) reports.set(action.id, await retrySweep(action));
    const byTrigger = new Map<string, Trigger>();
    for (const action of actions) {
      if (isSweepAction(action)) continue;
      const trigger = (action.call as Partial<StoredCall> | null)?.trigger ?? ANY_EVENT;
      byTrigger.set(canonicalJson(trigger), trigger);
    }
    if (item)
      for (const trigger of byTrigger.values()) {
        const execution = await evaluateItem(item, trigger);
        for (const call of execution?.calls ?? []) reports.set(call.id, call);
      }
    // Still in the outbox and neither carried out nor withdrawn by a fresh evaluation: the
    // item is gone, its note is gone, or its project has no rules any more.
    const results: CallReport[] = [];
    for (const action of actions) {
      const report = reports.get(action.id);
      if (report) {
        results.push(report);
        continue;
      }
      const held = store.dueActions?.(Number.MAX_SAFE_INTEGER).find((one) => one.id === action.id);
      results.push(
        held
          ? await executor.withdrawAction(
              action,
              item
                ? 'no fresh evaluation plans it (the item, its note or its rules are gone)'
                : `cannot tell which item ${itemKey} is`,
            )
          : {
              id: action.id,
              op: 'unknown',
              rule: action.rule,
              action: 'unknown',
              reason: '',
              call: '(done meanwhile)',
              status: 'skipped',
              detail: 'no longer in the outbox',
            },
      );
    }
    return results;
  }
}
