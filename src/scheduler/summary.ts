/**
 * Sweep reports in words, for `hookbot sweep --once` and the logs: what each sweep looked at, the
 * actions taken (or, in a dry run, planned), what waits for the next run and why.
 */
import type { SweepReport } from './sweep-set.ts';
import type { HookCheckReport } from './sweeps/hook-check.ts';
import type { MergeQueueReport } from './sweeps/merge-queue.ts';
import type { MergeWatchReport } from './sweeps/merge-watch.ts';
import type { ReconcileReport } from './sweeps/reconcile.ts';
import type { RetryReport } from './sweeps/retries.ts';
import type { RuleSweepReport } from './sweeps/rule-sweep.ts';
import type { CallReport } from '../rules/index.ts';
import { counted } from '../text/index.ts';
import type { SweepRunResult } from './scheduler.ts';

const PREFIX: Record<'issue' | 'merge_request', string> = { issue: '#', merge_request: '!' };

function callLine(call: CallReport): string {
  const extra = call.parked
    ? ` [parked: ${call.parked}]`
    : call.error && call.error !== call.detail
      ? ` (${call.error})`
      : '';
  return `${call.status}: ${call.call}: ${call.detail}${extra}`;
}

function rules(report: RuleSweepReport): string[] {
  if (report.projects.length === 0) return ['  no scheduled rule is due'];
  const lines: string[] = [];
  for (const project of report.projects) {
    const seen = Object.entries(project.items).map(([kind, count]) =>
      counted(count, kind === 'issue' ? 'open issue' : 'open merge request'),
    );
    lines.push(
      `  ${project.project}: ${seen.join(', ') || 'nothing listed'} (${counted(project.pages, 'page')})${project.error ? `: ERROR ${project.error}` : ''}`,
    );
    for (const rule of project.rules) {
      const head = `    "${rule.rule}" [${rule.schedule}]`;
      if (rule.outcome === 'paused') {
        lines.push(`${head}: paused: ${rule.reason ?? ''}`);
        continue;
      }
      const counts = `${rule.matched} of ${rule.lookedAt} to act on`;
      if (rule.outcome === 'tripped') {
        lines.push(`${head}: ${counts}: circuit breaker tripped (${rule.reason ?? ''}); nothing touched`);
        continue;
      }
      const waiting =
        rule.waiting > 0 ? `, ${counted(rule.waiting, 'waits', 'wait')} for the next run (budget)` : '';
      lines.push(`${head}: ${counts}, ${rule.acted} ${report.dryRun ? 'planned' : 'acted on'}${waiting}`);
      for (const item of rule.items) {
        lines.push(`      ${PREFIX[item.kind]}${item.iid} ${JSON.stringify(item.title)}`);
        for (const call of item.calls) lines.push(`        ${callLine(call)}`);
      }
    }
  }
  for (const name of report.tripped)
    lines.push(
      `  rule "${name}" ${report.dryRun ? 'would be' : 'is'} paused; approve with: hookbot sweep --once --approve "${name}"`,
    );
  for (const name of report.unpaused) lines.push(`  rule "${name}": definition changed, pause lifted`);
  return lines;
}

function mergeWatch(report: MergeWatchReport): string[] {
  if (report.watched === 0) return ['  nothing watched'];
  return report.items.map(
    (item) => `  ${item.project}!${item.mrId} ("${item.rule}"): ${item.outcome}: ${item.detail}`,
  );
}

function mergeQueue(report: MergeQueueReport): string[] {
  if (report.items.length === 0) return ['  no merge request queued'];
  return report.items.map(
    (item) =>
      `  ${item.project} ${item.queue}/${item.targetBranch} ${item.itemKey}: ${item.outcome}: ${item.detail}`,
  );
}

function retries(report: RetryReport): string[] {
  const lines = [
    `  ${counted(report.due, 'due action')}, ${report.calls.length} tried; ${counted(report.parked, 'parked action')} in all`,
  ];
  for (const call of report.calls) lines.push(`    ${callLine(call)}`);
  if (report.stoppedEarly) lines.push(`  stopped early: ${report.stoppedEarly}`);
  return lines;
}

function reconcile(report: ReconcileReport): string[] {
  return report.projects.map(
    (project) =>
      `  ${project.project}: updated since ${project.since}: ${counted(project.evaluated, 'item')} evaluated${project.failed ? `, ${project.failed} failed` : ''} (${counted(project.pages, 'page')})${project.error ? `: ERROR ${project.error}` : ''}`,
  );
}

function hookCheck(report: HookCheckReport): string[] {
  if (report.problem) return [`  ${report.problem}`];
  return report.projects.map((project) => {
    const extra = [
      project.unsupportedEvents
        ? `not supported by this server: ${project.unsupportedEvents.join(', ')}`
        : '',
      project.duplicates
        ? `${counted(project.duplicates, 'duplicate hook')} (each delivery arrives more than once)`
        : '',
    ].filter(Boolean);
    return `  ${project.project}: ${project.state}: ${project.detail}${extra.length ? ` (${extra.join('; ')})` : ''}`;
  });
}

export function summarise(report: SweepReport): string {
  const title = `${report.sweep}${report.dryRun ? ' (dry run: nothing changed)' : ''}${report.aborted ? ' (stopped before the end)' : ''}`;
  let body: string[];
  switch (report.sweep) {
    case 'rules':
      body = rules(report);
      break;
    case 'merge_watch':
      body = mergeWatch(report);
      break;
    case 'merge_queue':
      body = mergeQueue(report);
      break;
    case 'retries':
      body = retries(report);
      break;
    case 'reconcile':
      body = reconcile(report);
      break;
    case 'hook_check':
      body = hookCheck(report);
      break;
  }
  return [title, ...body].join('\n');
}

/**
 * How a run ended, from its report: `stopped` before its end, `paused` when the circuit breaker
 * paused a scheduled rule (and nothing else failed), `failed` when it needs a person's attention
 * otherwise, else `ok` (scheduler.ts records the last success of an `ok` run).
 */
export function sweepRunResult(report: SweepReport): SweepRunResult {
  if (report.aborted) return 'stopped';
  if (!needsAttention(report)) return 'ok';
  if (report.sweep === 'rules' && !report.projects.some((project) => project.error !== undefined))
    return 'paused';
  return 'failed';
}

/** The rules the circuit breaker paused in this run. */
export function trippedRules(report: SweepReport): readonly string[] {
  return report.sweep === 'rules' && !report.dryRun ? report.tripped : [];
}

/** Whether a report needs a person's attention (the CLI exits 1). */
export function needsAttention(report: SweepReport): boolean {
  switch (report.sweep) {
    case 'rules':
      return report.tripped.length > 0 || report.projects.some((project) => project.error !== undefined);
    case 'merge_watch':
    case 'merge_queue':
      return report.counts.error > 0;
    case 'retries':
      return report.parkedNow.length > 0;
    case 'reconcile':
      return report.failed > 0 || report.projects.some((project) => project.error !== undefined);
    case 'hook_check':
      // No hooks.url (problem) means hooks are not hookbot's business here: not a failure.
      return report.projects.some((project) => !['ok', 'created', 'repaired'].includes(project.state));
  }
}
