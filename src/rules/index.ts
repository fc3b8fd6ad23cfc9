/**
 * The rules, seen from outside: what the CLI, receiver, scheduler, status page and start-up use. Everything else in rules/ is internal; outside code imports only this file (eslint enforces it). Inside: grammar/ (rule files: load, check, schema, docs), engine/ (compile and evaluate: conditions and actions plan calls), executor/ (the only writer: one file per kind of API call in executor/calls/), item/ (one item from read to decision: snapshot, evaluate, execute, withdraw, fresh check).
 */
export { ruleSet, type CompiledRule, type CompiledRuleSet } from './engine/compile.ts';
export { evaluate, type Evaluation } from './engine/engine.ts';
export { eventMatches, unionEvents } from './engine/event-names.ts';
export { type PlannedCall } from './engine/planned-call.ts';
export {
  isBotUser,
  type BotIdentity,
  type ItemKind,
  type ItemSnapshot,
  type ProjectRef,
  type Trigger,
  type TriggerAction,
  type UserRef,
} from './engine/snapshot.ts';
export { classifyStatus, type StatusBucket } from './engine/status-buckets.ts';
export {
  createExecutor,
  type CallReport,
  type CallStatus,
  type ExecutionReport,
  type Executor,
  type StoredCall,
} from './executor/executor.ts';
export { actionIdOf, itemKeyOf } from './executor/ids.ts';
export { createItemRuns, outsideItemRuns, type ItemRuns } from './executor/lock.ts';
export { definitionHash, pause, pauseReason, pausedDefinition, type BrakeStore } from './item/brake.ts';
export {
  approveEcho,
  createEchoBrake,
  echoPauseOf,
  echoPauses,
  type EchoBrake,
  type EchoLimits,
} from './item/echo-brake.ts';
export { createRulesHolder, type RulesHolder, type RulesState } from './grammar/rules-holder.ts';
export {
  explainKind,
  findDecision,
  itemName,
  itemNumber,
  projectRefProblem,
  type ExplainQuery,
} from './item/find-decision.ts';
export { createFreshCheck } from './item/fresh-check.ts';
export { changeAfter } from './item/pushed-since-note.ts';
export { cancelServerMerge, disarmIfOutgrown } from './item/disarm.ts';
export { runNow, runOutbox, toOutbox } from './executor/outbox-now.ts';
export { leaveAt } from './executor/queue-removal.ts';
export { decisionActed } from './item/kept-decision.ts';
export { explainAnswer, type ExplainResult, type ExplainSelector } from './item/explain-answer.ts';
export {
  createItemProcessor,
  decisionText,
  type Decision,
  type ItemProcessorFn,
  type ItemRetryFn,
  type ProjectRules,
} from './item/process-item.ts';
export {
  createSnapshotReader,
  type SnapshotClient,
  type SnapshotNeeds,
  type SnapshotReader,
} from './item/read-snapshot.ts';
export { withdrawRemovedRules } from './item/withdraw.ts';
export { loadRules, readRuleFolder } from './grammar/load.ts';
export { formatProblem, problemCount } from './grammar/problem.ts';
export { MAX_RULE_FILE_BYTES, tooLarge } from './grammar/parse-file.ts';
export { checkRules } from './grammar/check.ts';
export { trainUses, type TrainUse } from './grammar/train-options.ts';
export { ruleFileSchema } from './grammar/schema.ts';
export { explainJson } from './engine/explain.ts';
export { createRepositoryRules, type RepositoryRulesState } from './repository/repository-rules.ts';
export { repositoryPolicy } from './repository/allow-list.ts';
export { MAX_BATCH, MAX_DEPTH } from './actions/queue.ts';
export { DEFAULT_RETRIES } from './actions/queue-retries.ts';
export { checkRepositoryFile } from './repository/repository-file.ts';
export { planChange, planLines, type PlanReport } from './repository/plan.ts';
export {
  CAR_OUTCOMES,
  createQueueEvents,
  noQueueEvents,
  QUEUE_MODES,
  REMOVAL_CODES,
  type QueueEvents,
  type QueueMetricsSink,
  type RemovalCode,
} from './queue/queue-events.ts';
