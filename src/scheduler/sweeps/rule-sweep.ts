/**
 * Rule sweeps: rules with `schedule:` run over the open issues or merge requests (per `for:`) of
 * each project, on the same engine and executor as hooks, with a `schedule` trigger.
 *
 * One run goes in three steps, so that the circuit breaker can stop a rule before it touches
 * anything anywhere:
 * 1. per project, the rules whose schedule is due (the next run per schedule and project lives in
 *    the store) are evaluated on every open item, listed 100 per page, least recently updated
 *    first (items acted on move to the back, so a budget-limited backlog rotates); per rule the
 *    items it would touch (a non-empty plan) are counted and the first `budget` kept;
 * 2. the breaker: a rule that would touch more than `maxItems`, or more than `maxShare` of the
 *    items it looked at, in any project, is paused (unless its definition was approved) and
 *    touches nothing this run, in no project;
 * 3. the kept items are acted on, each item's plan whole (the budget counts items, so a comment
 *    is never posted without the close that goes with it); the rest wait for the next run.
 * A project's schedules advance only once its run finished; a run stopped halfway (crash,
 * abort) is simply done again, which the level-triggered engine and the executor's outbox and
 * re-checks make harmless: what was done is not planned again, what was not is.
 *
 * A dry run (the executor in dry-run mode) reports the same and writes nothing to the store.
 */
import type { StateStore } from '../../state/index.ts';
import {
  DEFAULT_BREAKER,
  definitionHash,
  isApproved,
  pause,
  pauseOf,
  pauseReason,
  pausedDefinition,
  tripReason,
  type BreakerLimits,
  type BreakerStore,
} from '../breaker.ts';
import { nextRunAfter, timingOfSchedule } from '../timing.ts';
import { messageOf, pagesFor, PER_PAGE, type SweepLog, type SweepRunOptions } from '../types.ts';
import { needsOf, type ListedItem, type ListedSnapshots, type SweepNeeds } from './listed-snapshot.ts';
import {
  type CallReport,
  type CallStatus,
  type CompiledRule,
  type CompiledRuleSet,
  type Decision,
  decisionActed,
  decisionText,
  evaluate,
  type Evaluation,
  type Executor,
  type ItemKind,
  type ItemSnapshot,
  itemKeyOf,
  type ProjectRules,
  ruleSet,
  type Trigger,
} from '../../rules/index.ts';
import type { Client } from '../../api/index.ts';

export const DEFAULT_BUDGET = 30;

/** The store key of a rule schedule's next run (per project). */
export const scheduleKey = (schedule: string): string => `rules:${schedule}`;

export interface RuleSweepDeps {
  client: { issues: Pick<Client['issues'], 'list'>; mergeRequests: Pick<Client['mergeRequests'], 'list'> };
  snapshots: ListedSnapshots;
  store: Pick<StateStore, 'nextRun' | 'setNextRun' | 'recordDecision'> & BreakerStore;
  rules: ProjectRules;
  executor: Executor;
  now: () => number;
  log: SweepLog;
}

export interface RuleSweepOptions extends SweepRunOptions {
  /** `namespace/project` paths. */
  projects: readonly string[];
  /** Only the rule of this name. */
  rule?: string;
  /** Every scheduled rule now, due or not (`hookbot sweep --once`). */
  force?: boolean;
  /** Items one rule may act on in one project in one run. Default 30. */
  budget?: number;
  breaker?: BreakerLimits;
  /** Rules to treat as approved without approving them (a dry run previewing `--approve`). */
  assumeApproved?: ReadonlySet<string>;
}

export type RuleOutcome = 'ran' | 'tripped' | 'paused';

export interface RuleRunReport {
  rule: string;
  project: string;
  schedule: string;
  outcome: RuleOutcome;
  /** The breaker's reason, or the pause's. */
  reason?: string;
  /** Open items of the rule's kind(s) evaluated. */
  lookedAt: number;
  /** Items it would touch (a plan with calls). */
  matched: number;
  /** Items acted on (or, in a dry run, described). */
  acted: number;
  /** Matched, left for the next run by the budget (or by the breaker, or a stop). */
  waiting: number;
  /** What was done (or, in a dry run, would be) to each item acted on. */
  items: ActedItem[];
  /** Calls by outcome. */
  counts: Record<CallStatus, number>;
}

export interface ActedItem {
  kind: ItemKind;
  iid: number;
  title: string;
  calls: CallReport[];
}

export interface ProjectSweepReport {
  project: string;
  /** Due schedules run for it. */
  schedules: string[];
  items: Partial<Record<ItemKind, number>>;
  pages: number;
  error?: string;
  rules: RuleRunReport[];
}

export interface RuleSweepReport {
  sweep: 'rules';
  dryRun: boolean;
  projects: ProjectSweepReport[];
  /** Rules this run paused (or, in a dry run, would pause). */
  tripped: string[];
  /** Paused rules whose definition changed: unpaused by this run. */
  unpaused: string[];
  /** Stopped before the end (signal): the rest waits for the next run. */
  aborted: boolean;
}

interface Candidate {
  snapshot: ItemSnapshot;
  evaluation: Evaluation;
}

interface RuleRun {
  rule: CompiledRule;
  set: CompiledRuleSet;
  hash: string;
  report: RuleRunReport;
  candidates: Candidate[];
}

interface ProjectRun {
  report: ProjectSweepReport;
  runs: RuleRun[];
  /** Due schedules, to advance once the project's run finished. */
  due: Set<string>;
}

const emptyCounts = (): Record<CallStatus, number> => ({
  done: 0,
  skipped: 0,
  failed: 0,
  ambiguous: 0,
  withdrawn: 0,
  'dry-run': 0,
});

const KINDS: readonly ItemKind[] = ['issue', 'merge_request'];
const KIND_SCOPE: Record<ItemKind, string> = { issue: 'issues', merge_request: 'merge requests' };

const appliesTo = (rule: CompiledRule, kind: ItemKind): boolean => rule.scope === null || rule.scope === kind;

const isCommentOnly = (evaluation: Evaluation): boolean =>
  evaluation.plan.every(
    (planned) =>
      planned.call.op === 'notes.createIssueNote' || planned.call.op === 'notes.createMergeRequestNote',
  );

export async function runRuleSweep(deps: RuleSweepDeps, options: RuleSweepOptions): Promise<RuleSweepReport> {
  const { store, executor, log } = deps;
  const dryRun = executor.dryRun;
  const budget = options.budget ?? DEFAULT_BUDGET;
  const limits = options.breaker ?? DEFAULT_BREAKER;
  const startedAt = deps.now();
  const signal = options.signal;
  const report: RuleSweepReport = {
    sweep: 'rules',
    dryRun,
    projects: [],
    tripped: [],
    unpaused: [],
    aborted: false,
  };
  const stopped = (): boolean => {
    if (signal?.aborted) report.aborted = true;
    return report.aborted;
  };

  // 1. Evaluate, per project.
  const definitions = new Map<string, Set<string>>();
  const projectRuns: ProjectRun[] = [];
  for (const project of options.projects) {
    if (stopped()) break;
    const run = await prepareProject(project);
    if (!run) continue;
    projectRuns.push(run);
    report.projects.push(run.report);
    try {
      await evaluateProject(project, run);
    } catch (error) {
      run.report.error = messageOf(error);
      log.error({ sweep: 'rules', project, err: error }, 'rule sweep: project skipped');
    }
  }

  // 2. The breaker, across projects: a rule paused in one is touched in none.
  const tripped = new Map<string, { hash: string; reason: string }>();
  for (const { runs, report: projectReport } of projectRuns) {
    if (projectReport.error !== undefined) continue;
    for (const run of runs) {
      const name = run.rule.name;
      if (tripped.has(name) || options.assumeApproved?.has(name) || isApproved(store, name, run.hash))
        continue;
      const why = tripReason(run.report.matched, run.report.lookedAt, limits);
      if (why) tripped.set(name, { hash: run.hash, reason: `${projectReport.project}: ${why}` });
    }
  }
  for (const [name, { hash, reason }] of tripped) {
    report.tripped.push(name);
    log.warn({ sweep: 'rules', rule: name, reason }, 'circuit breaker: rule paused until approved');
    if (!dryRun) await pause(store, name, hash, reason);
  }

  // 3. Act, within the budget.
  for (const { runs, report: projectReport, due } of projectRuns) {
    let complete = projectReport.error === undefined && !stopped();
    for (const run of runs) {
      const trip = tripped.get(run.rule.name);
      if (trip) {
        run.report.outcome = 'tripped';
        run.report.reason = trip.reason;
      } else if (complete) {
        complete = await act(run);
      }
      run.report.waiting = run.report.matched - run.report.acted;
    }
    // A run filtered to one rule leaves its schedule's other rules undone: it advances nothing.
    if (complete && !dryRun && options.rule === undefined) {
      for (const schedule of due) {
        const next = nextRunAfter(timingOfSchedule(schedule), startedAt);
        if (Number.isFinite(next)) await store.setNextRun(scheduleKey(schedule), projectReport.project, next);
      }
    }
  }
  return report;

  /** The definitions of a rule name across the run's projects (a project file may redefine it). */
  function definitionsOf(name: string): Set<string> {
    let found = definitions.get(name);
    if (!found) {
      const rules = options.projects.flatMap((path) => deps.rules.forProject(path).rules);
      found = new Set(rules.filter((rule) => rule.name === name).map(definitionHash));
      definitions.set(name, found);
    }
    return found;
  }

  async function prepareProject(project: string): Promise<ProjectRun | undefined> {
    // Repository rules: the project's .hookbot.yml, read once; a server away leaves the central rules.
    await deps.rules
      .prepare?.(project)
      .catch((error: unknown) =>
        log.warn({ sweep: 'rules', project, err: error }, 'rule sweep: cannot read the repository rules yet'),
      );
    const scheduled = deps.rules
      .forProject(project)
      .rules.filter(
        (rule) => rule.schedule !== null && (options.rule === undefined || rule.name === options.rule),
      );
    const dueRules = scheduled.filter((rule) => {
      if (options.force) return true;
      const next = store.nextRun(scheduleKey(rule.schedule ?? ''), project);
      return next === undefined || next <= startedAt;
    });
    if (dueRules.length === 0) return undefined;
    const projectReport: ProjectSweepReport = {
      project,
      schedules: [...new Set(dueRules.map((rule) => rule.schedule ?? ''))],
      items: {},
      pages: 0,
      rules: [],
    };
    const runs: RuleRun[] = [];
    for (const rule of dueRules) {
      const hash = definitionHash(rule);
      const ruleReport: RuleRunReport = {
        rule: rule.name,
        project,
        schedule: rule.schedule ?? '',
        outcome: 'ran',
        lookedAt: 0,
        matched: 0,
        acted: 0,
        waiting: 0,
        items: [],
        counts: emptyCounts(),
      };
      projectReport.rules.push(ruleReport);
      const paused = pauseOf(store, rule.name);
      if (paused && !options.assumeApproved?.has(rule.name)) {
        const pausedHash = pausedDefinition(paused);
        if (pausedHash === undefined || definitionsOf(rule.name).has(pausedHash)) {
          ruleReport.outcome = 'paused';
          ruleReport.reason = `${pauseReason(paused)} (paused ${new Date(paused.at).toISOString()}; approve with hookbot sweep --approve "${rule.name}")`;
          continue;
        }
        // "a config change" lifts the pause: no project's definition of it is the one that tripped.
        if (!report.unpaused.includes(rule.name)) {
          report.unpaused.push(rule.name);
          log.info({ sweep: 'rules', rule: rule.name }, 'rule definition changed: pause lifted');
          if (!dryRun) await store.approveRule(rule.name);
        }
      }
      runs.push({ rule, set: ruleSet([rule]), hash, report: ruleReport, candidates: [] });
    }
    return { report: projectReport, runs, due: new Set(projectReport.schedules) };
  }

  async function evaluateProject(project: string, run: ProjectRun): Promise<void> {
    for (const kind of KINDS) {
      const runs = run.runs.filter((ruleRun) => appliesTo(ruleRun.rule, kind));
      if (runs.length === 0) continue;
      const needs = needsOf(runs.map((ruleRun) => ruleRun.rule));
      const trigger: Trigger = { kind: 'schedule', byBot: false };
      let items = 0;
      for await (const listed of listOpen(project, kind)) {
        if (stopped()) return;
        items++;
        const snapshot = await deps.snapshots.of(listed, trigger, needs);
        for (const ruleRun of runs) await consider(ruleRun, listed, snapshot, needs);
        if (items % PER_PAGE === 0)
          options.onProgress?.({
            sweep: 'rules',
            scope: `${project} ${KIND_SCOPE[kind]}`,
            items,
            pages: items / PER_PAGE,
          });
      }
      run.report.items[kind] = items;
      run.report.pages += pagesFor(items);
      options.onProgress?.({
        sweep: 'rules',
        scope: `${project} ${KIND_SCOPE[kind]}`,
        items,
        pages: pagesFor(items),
      });
    }
  }

  function listOpen(project: string, kind: ItemKind): AsyncIterable<ListedItem> {
    const filter = { state: 'opened', order_by: 'updated_at', sort: 'asc' } as const;
    if (kind === 'issue')
      return mapItems(deps.client.issues.list(project, filter), (item) => ({ kind, item }));
    return mapItems(deps.client.mergeRequests.list(project, filter), (item) => ({ kind, item }));
  }

  async function consider(
    ruleRun: RuleRun,
    listed: ListedItem,
    snapshot: ItemSnapshot,
    needs: SweepNeeds,
  ): Promise<void> {
    ruleRun.report.lookedAt++;
    const trigger: Trigger = { kind: 'schedule', schedule: ruleRun.rule.schedule ?? undefined, byBot: false };
    let seen: ItemSnapshot = { ...snapshot, trigger };
    let evaluation = evaluate(ruleRun.set, seen, { now: startedAt });
    if (evaluation.plan.length === 0) return;
    if (isCommentOnly(evaluation)) {
      // Whether the comment is already there decides whether the item is touched at all.
      seen = await deps.snapshots.of(listed, trigger, { ...needs, commentMarkers: true });
      evaluation = evaluate(ruleRun.set, seen, { now: startedAt });
      if (evaluation.plan.length === 0) return;
    }
    ruleRun.report.matched++;
    if (ruleRun.candidates.length < budget) ruleRun.candidates.push({ snapshot: seen, evaluation });
  }

  /** Acts on the kept items; false when stopped before the end. */
  async function act(ruleRun: RuleRun): Promise<boolean> {
    for (const { snapshot, evaluation } of ruleRun.candidates) {
      if (stopped()) return false;
      // Acted on and recorded as one run of the item: a hook run on it waits, and this for it.
      const key = itemKeyOf(snapshot.kind, snapshot.project.id, snapshot.id);
      await executor.runs.run(key, () => actOn(ruleRun, snapshot, evaluation));
    }
    return true;
  }

  async function actOn(ruleRun: RuleRun, snapshot: ItemSnapshot, evaluation: Evaluation): Promise<void> {
    const execution = await executor.execute(evaluation, snapshot, { rules: ruleRun.set });
    ruleRun.report.acted++;
    ruleRun.report.items.push({
      kind: snapshot.kind,
      iid: snapshot.iid,
      title: snapshot.title,
      calls: execution.calls,
    });
    for (const call of execution.calls) ruleRun.report.counts[call.status]++;
    if (dryRun) return;
    const decision: Omit<Decision, 'text'> = {
      itemKey: execution.itemKey,
      at: new Date(deps.now()).toISOString(),
      dryRun,
      evaluation,
      execution,
    };
    await store.recordDecision(
      execution.itemKey,
      { ...decision, text: decisionText(decision) },
      { acted: decisionActed(decision) },
    );
    // A scheduled merge whose head moved: the push that moved it wakes its own evaluation.
    if (execution.headMoved)
      log.info({ sweep: 'rules', itemKey: execution.itemKey }, 'head moved; left to its push');
  }
}

async function* mapItems<T>(
  items: AsyncIterable<T>,
  wrap: (item: T) => ListedItem,
): AsyncIterable<ListedItem> {
  for await (const item of items) yield wrap(item);
}
