/**
 * What the `npm start` banner may promise (issue 37): the labels the rules in force would add to the
 * issue its next step opens, found by evaluating those rules on that issue as the bot will when its
 * hook arrives (`issue.open`, by alice, no labels yet). Before, the banner said "the bot adds bug and
 * needs-triage" whatever the rules folder held.
 */
import type { CompiledRuleSet, ItemSnapshot } from '../rules/index.ts';

/** The issue the banner's next step opens. */
export const DEMO_ISSUE = { project: 'acme/web', title: 'It crashes on start', author: 'alice' };

export async function labelsOnOpen(set: CompiledRuleSet, now = Date.now()): Promise<string[]> {
  const { evaluate } = await import('../rules/index.ts');
  const at = new Date(now).toISOString();
  const snapshot: ItemSnapshot = {
    kind: 'issue',
    id: 0,
    iid: 0,
    project: { id: 0, path_with_namespace: DEMO_ISSUE.project },
    title: DEMO_ISSUE.title,
    description: null,
    state: 'opened',
    labels: [],
    author: { id: 0, username: DEMO_ISSUE.author },
    assignee: null,
    milestone: null,
    created_at: at,
    updated_at: at,
    trigger: {
      kind: 'issue',
      action: 'open',
      byBot: false,
      events: [{ name: 'issue.open', byBot: false }],
    },
  };
  const added = evaluate(set, snapshot, { now }).plan.flatMap((planned) =>
    planned.call.op === 'issues.update' ? (planned.call.labels?.add ?? []) : [],
  );
  return [...new Set(added)];
}

/** `bug`, `bug and needs-triage`, `bug, question and needs-triage`. */
export function andList(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}
