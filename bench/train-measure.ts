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
