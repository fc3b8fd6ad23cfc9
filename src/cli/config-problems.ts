/** How every command reports a configuration it cannot use: each problem on a line of its own. */
export function configProblems(problems: readonly string[]): string {
  return `the configuration has problems:\n${problems.map((p) => `  ${p}`).join('\n')}`;
}
