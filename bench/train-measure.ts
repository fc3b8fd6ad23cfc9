/**
 * What the merge train benchmark (bench/merge-train.bench.ts) measures, apart from the bot: the
 * broken commits on the target (its first-parent line, each commit's tree judged by the CI's own
 * check) and the CI runs a mode used.
 */

/** A commit as the sandbox's git log gives it. */
export interface LineCommit {
  id: string;
  parent_ids: string[];
}

/**
 * The first-parent line ending at `head`, oldest first: the commits the target branch pointed at one
 * after the other when every change landed as a merge commit or a fast-forward onto it. A commit
 * missing from `commits` ends the walk (a history longer than what was read).
 */
export function firstParentLine(commits: readonly LineCommit[], head: string): string[] {
  const byId = new Map(commits.map((c) => [c.id, c]));
  const line: string[] = [];
  const seen = new Set<string>();
  for (let sha: string | undefined = head; sha && byId.has(sha) && !seen.has(sha);) {
    seen.add(sha);
    line.push(sha);
    sha = byId.get(sha)!.parent_ids[0];
  }
  return line.reverse();
}

/** How many commits of `line` fail the check (asked one by one, in order). */
export async function countBroken(
  line: readonly string[],
  passes: (sha: string) => Promise<boolean>,
): Promise<{ broken: number; firstBroken: string | undefined }> {
  let broken = 0;
  let firstBroken: string | undefined;
  for (const sha of line)
    if (!(await passes(sha))) {
      broken++;
      firstBroken ??= sha;
    }
  return { broken, firstBroken };
}

/** The CI runs made since this was called (the CI counts one per new commit it builds). */
export function ciRunCounter(ci: { readonly runs: number }): () => number {
  const start = ci.runs;
  return () => ci.runs - start;
}

/** A push the sandbox told its listeners of, in order (`seq`), with when (`at`, performance.now()). */
export interface SeenPush {
  seq: number;
  at: number;
  ref: string;
  after: string;
}

/**
 * CI runs for a head already replaced when the run started (issue 38): a run is the first push of a
 * commit (the simulated CI builds each commit once, when first pushed); its merged heads are the
 * second parents along its first-parent line (`parentsOf`: the commit and each first parent down,
 * with their parents, as `git rev-list --first-parent --parents` gives them); a head counts as
 * replaced when it was pushed to a source branch (`sources`: the branch names) and that branch was
 * pushed again with another commit (after `from`, a `seq`) before the run's first push. Only runs
 * first pushed after `from` are judged. Answers the stale runs' commits.
 */
export async function staleRuns(
  pushes: readonly SeenPush[],
  sources: ReadonlySet<string>,
  from: number,
  parentsOf: (sha: string) => Promise<string[][]>,
): Promise<string[]> {
  const firstSeen = new Map<string, number>();
  for (const p of pushes) if (!firstSeen.has(p.after) && !/^0+$/.test(p.after)) firstSeen.set(p.after, p.seq);
  /** Per head pushed to a source branch: the seq at which that branch moved off it (if it did). */
  const replacedAt = new Map<string, number>();
  const current = new Map<string, string>();
  for (const p of pushes) {
    const branch = p.ref.replace(/^refs\/heads\//, '');
    if (!sources.has(branch)) continue;
    const before = current.get(branch);
    // Replacements from `from` on: a branch's creation and first commit are how it got its head.
    if (p.seq > from && before && before !== p.after && !replacedAt.has(before))
      replacedAt.set(before, p.seq);
    current.set(branch, p.after);
  }
  const stale: string[] = [];
  for (const [sha, seq] of firstSeen) {
    if (seq <= from) continue;
    const line = await parentsOf(sha);
    const heads = line.map((commit) => commit[2]).filter((h): h is string => h !== undefined);
    if (heads.some((h) => (replacedAt.get(h) ?? Infinity) < seq)) stale.push(sha);
  }
  return stale;
}

/** The p50 and the max of `values` (0 when empty). */
export function p50max(values: readonly number[]): { p50: number; max: number } {
  if (values.length === 0) return { p50: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: sorted[Math.floor((sorted.length - 1) / 2)]!, max: sorted.at(-1)! };
}
