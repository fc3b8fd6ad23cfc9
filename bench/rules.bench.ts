/**
 * Rule evaluation: 1,000 rules against one merge request's fresh state, compiled once at load
 * (the engine's way), side by side with the same evaluation recompiling the rules on every event
 * (what an engine without a compile step pays). Target: median under 1 ms per evaluation.
 * `ratio` = baseline time / compiled time: how many times faster compiling once is.
 * Then the regex corpus: patterns that freeze a backtracking engine, each on its hostile 64 KiB
 * input, on the rules' linear-time engine; `regex_worst_ms` is the slowest (median of 5 runs).
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { compileRules } from '../src/rules/engine/compile.ts';
import { compileRegex, REGEX_ENGINE, testBounded } from '../src/rules/engine/regex.ts';
import { PATHOLOGICAL_PATTERNS } from '../test/fixtures/pathological-patterns.ts';
import { evaluate } from '../src/rules/engine/engine.ts';
import { ruleFileSchema, type RuleSpec } from '../src/rules/grammar/schema.ts';
import type { MergeRequestSnapshot } from '../src/rules/engine/snapshot.ts';

const RULES = 1_000;
const NOW = Date.parse('2016-03-20T00:00:00.000Z');

/**
 * The event groups rules listen to. A real rule set spreads its rules over events: for a merge
 * request update, the rules of two groups of five apply (about 400 of 1,000).
 */
const GROUPS = [
  { on: ['issue.open', 'issue.update'] },
  { on: ['merge_request.open', 'merge_request.update'] },
  { on: ['note.created'] },
  { on: ['status.changed', 'merge_request.update'] },
  { schedule: 'daily' },
] as const;

/** Ten rule shapes, varied by index: regexes, globs, ages, statuses, nesting, every action kind. */
function ruleAt(index: number, when: Record<string, unknown>): unknown {
  const n = index % 10;
  const label = `area-${index % 37}`;
  const rule = (name: string, conditions: unknown[], actions: unknown[]) => ({
    name: `r${index} ${name}`,
    ...when,
    if: conditions,
    do: actions,
  });
  switch (n) {
    case 0:
      return rule(
        'regex',
        [{ title: { matches: `(?i)\\b(fix|feat${index % 13})\\b` } }, { labels: { none: [label] } }],
        [{ label: { add: [label] } }],
      );
    case 1:
      return rule(
        'files',
        [{ files: { any_match: [`src/mod${index % 17}/**`, '**/*.css'] } }],
        [{ label: { toggle: [label] } }],
      );
    case 2:
      return rule(
        'merge',
        [
          { state: 'opened' },
          { work_in_progress: false },
          { labels: { any: [`automerge-${index % 7}`] } },
          { statuses: { required: ['ci/build', 'ci/test'] } },
        ],
        [{ merge: { remove_source_branch: true } }],
      );
    case 3:
      return rule(
        'age',
        [{ updated: { older_than: `${(index % 30) + 1}d` } }, { labels: { any: [label] } }],
        [{ comment: `Ping @{{ author.username }} (${index})` }],
      );
    case 4:
      return rule(
        'nested',
        [
          {
            any: [
              { author: { in: [`user${index % 50}`, 'carol'] } },
              { not: { labels: { any: [label, 'ui'] } } },
            ],
          },
          { target_branch: { in: ['master', 'main'] } },
        ],
        ['subscribe'],
      );
    case 5:
      return rule(
        'votes',
        [{ upvotes: { at_least: (index % 4) + 2 } }, { downvotes: 0 }],
        [
          {
            status: {
              name: `hookbot/votes-${index}`,
              state: 'success',
              description: '{{ upvotes }} upvotes',
            },
          },
        ],
      );
    case 6:
      return rule(
        'branch',
        [{ source_branch: { glob: `feature/*${index % 7}` } }, { merge_status: 'can_be_merged' }],
        [{ assign: { to: 'alice' } }],
      );
    case 7:
      return rule(
        'description',
        [{ description: { contains: `#${index}` } }, { milestone: { matches: '^v1\\.' } }],
        [{ label: { remove: ['needs-info'] } }],
      );
    case 8:
      return rule(
        'arm',
        [
          { statuses: { required: ['ci/build', 'ci/test'], state: 'pending' } },
          { merge_when_build_succeeds: false },
        ],
        ['merge_when_build_succeeds'],
      );
    default:
      return rule(
        'actor',
        [
          { actor: { in: [`user${index % 50}`] } },
          { event: { in: ['merge_request.update', 'status.changed'] } },
        ],
        [{ label: { add: [`seen-${index % 5}`] } }],
      );
  }
}

const parseRules = (make: (index: number) => unknown): RuleSpec[] =>
  ruleFileSchema.parse({ rules: Array.from({ length: RULES }, (_, index) => make(index)) }).rules;

/** Realistic: rules spread over events, conditions specific to a few items. */
const realistic = [
  {
    file: 'bench.yml',
    rules: parseRules((i) => ruleAt(i, GROUPS[Math.floor(i / 10) % GROUPS.length] ?? {})),
  },
];
/** Worst case: every rule listens to this event. */
const allApply = [
  { file: 'bench.yml', rules: parseRules((i) => ruleAt(i, { on: ['merge_request.update'] })) },
];

const snapshot: MergeRequestSnapshot = {
  kind: 'merge_request',
  id: 7,
  iid: 1,
  project: { id: 8, path_with_namespace: 'acme/web' },
  title: 'Fix dark mode on start',
  description: 'Closes #11. '.repeat(50),
  state: 'opened',
  labels: ['automerge-2', 'area-3', 'ui'],
  author: { id: 6, username: 'bob' },
  assignee: { id: 5, username: 'alice' },
  milestone: 'v1.2',
  created_at: '2016-03-18T10:00:00.000Z',
  updated_at: '2016-03-10T22:00:00.000Z',
  source_branch: 'feature/dark-mode-3',
  target_branch: 'master',
  work_in_progress: false,
  merge_status: 'can_be_merged',
  merge_when_build_succeeds: false,
  upvotes: 2,
  downvotes: 0,
  sha: '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c',
  statuses: [
    { name: 'ci/build', status: 'success', allow_failure: false },
    { name: 'ci/test', status: 'success', allow_failure: false },
  ],
  changedFiles: ['src/mod3/theme.ts', 'src/styles/dark.css', 'README.md'],
  trigger: { kind: 'merge_request', action: 'update', actor: { id: 6, username: 'user9' }, byBot: false },
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

interface Timing {
  /** Median wall time of one call, ms. */
  wall: number;
  /** Median CPU time of one call, ms: steadier than wall time on a busy shared machine. */
  cpu: number;
}

/**
 * Half a second of warm-up (the JIT needs hundreds of calls), then `repetitions` batches of about
 * 40 ms each; medians of the per-call times. Sized by time, so the run stays well under a minute.
 */
function measure(repetitions: number, once: () => unknown): Timing {
  let calls = 0;
  const warm = performance.now();
  while (performance.now() - warm < 500 || calls < 3) {
    once();
    calls++;
  }
  const batch = Math.max(1, Math.ceil(40 / ((performance.now() - warm) / calls)));
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let rep = 0; rep < repetitions; rep++) {
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < batch; i++) once();
    walls.push((performance.now() - start) / batch);
    const cpu = process.cpuUsage(cpuStart);
    cpus.push((cpu.user + cpu.system) / 1000 / batch);
  }
  return { wall: median(walls), cpu: median(cpus) };
}

export async function run(): Promise<Record<string, number | string>> {
  const compileStart = performance.now();
  const compiled = compileRules(realistic);
  const compileMs = performance.now() - compileStart;
  const worst = compileRules(allApply);
  const sample = evaluate(compiled, snapshot, { now: NOW });
  const worstSample = evaluate(worst, snapshot, { now: NOW });

  // The baseline last: recompiling leaves much garbage behind, which would slow what follows.
  const subject = measure(11, () => evaluate(compiled, snapshot, { now: NOW }));
  const everyRule = measure(11, () => evaluate(worst, snapshot, { now: NOW }));
  const baseline = measure(7, () => evaluate(compileRules(realistic), snapshot, { now: NOW }));

  const regex = worstPathological();

  const round = (value: number, digits = 3) => Number(value.toFixed(digits));
  return {
    rules: RULES,
    applied: sample.rules.filter((rule) => rule.applies).length,
    matched: sample.rules.filter((rule) => rule.matched).length,
    planned_calls: sample.plan.length,
    compile_ms: round(compileMs, 1),
    median_ms: round(subject.wall),
    median_cpu_ms: round(subject.cpu),
    baseline_median_ms: round(baseline.wall),
    ratio: round(baseline.wall / subject.wall, 1),
    target_ms: 1,
    all_apply_matched: worstSample.rules.filter((rule) => rule.matched).length,
    all_apply_median_ms: round(everyRule.wall),
    all_apply_median_cpu_ms: round(everyRule.cpu),
    regex_engine: REGEX_ENGINE,
    regex_patterns: PATHOLOGICAL_PATTERNS.length,
    regex_worst_ms: round(regex.ms, 1),
    regex_worst_pattern: regex.source,
  };
}

/** The slowest pattern of the corpus on its input: the median of 5 runs each. */
function worstPathological(): { source: string; ms: number } {
  let worst = { source: '', ms: 0 };
  for (const { source, input } of PATHOLOGICAL_PATTERNS) {
    const pattern = compileRegex(source);
    const text = input();
    const times = Array.from({ length: 5 }, () => {
      const start = performance.now();
      testBounded(pattern, text);
      return performance.now() - start;
    });
    const ms = median(times);
    if (ms > worst.ms) worst = { source, ms };
  }
  return worst;
}

// `npx tsx bench/rules.bench.ts` prints the figures; `npm run bench` imports run().
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(JSON.stringify(await run(), null, 2));
}
