/**
 * `npm test`, stage by stage: the tools the tests drive (wrk, Chromium), the type check, lint, the
 * vitest suite and the reliability suite's small configuration. Every stage runs, whatever the
 * stages before it did: a type error must not hide a failing test, and a failing test must not hide
 * a reliability scenario that no longer passes (the suite used to be skipped without a word after a
 * vitest failure). The end is one block that says, for each stage, whether it ran and its result,
 * and the closing line CI reads, `N passed, N failed`, which names the stages that failed or did
 * not run.
 *
 * The stages themselves (spawning npm, vitest, apt-get) are in run-tests.js's runners; this module
 * only orders them and reports, so that the reporting can be tested with stub runners.
 */

export const STAGE_NAMES = ['tools', 'typecheck', 'lint', 'vitest', 'reliability'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

export type StageResult =
  | {
      name: StageName;
      ran: true;
      ok: boolean;
      /** Tests counted by the stage (vitest's tests, reliability's scenarios); 0 for the others. */
      passed: number;
      failed: number;
      skipped: number;
      /** What to say after "passed" or "failed": the counts, the exit code, what was installed. */
      detail: string;
    }
  | {
      name: StageName;
      ran: false;
      /** Why it did not run: said in the block and on the closing line. */
      why: string;
    };

export interface Stage {
  name: StageName;
  run(): Promise<StageResult> | StageResult;
}

/**
 * Runs every stage in order, each whatever the others did. A runner that throws did not run: the
 * error is its reason (the stage is then counted as a failure of the run, never as a pass).
 */
export async function runStages(
  stages: readonly Stage[],
  print: (line: string) => void = (line) => console.log(line),
): Promise<StageResult[]> {
  const results: StageResult[] = [];
  for (const stage of stages) {
    print(`\n== npm test: ${stage.name}`);
    let result: StageResult;
    try {
      result = await stage.run();
    } catch (error) {
      result = { name: stage.name, ran: false, why: error instanceof Error ? error.message : String(error) };
    }
    results.push(result);
    print(`== npm test: ${stageLine(result)}`);
    // The runners block (spawnSync): a Ctrl-C that came meanwhile is handled here, before the next.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return results;
}

/** `vitest: ran, failed: 1200 passed, 3 failed` or `reliability: NOT RUN: why`. */
export function stageLine(result: StageResult): string {
  if (!result.ran) return `${result.name}: NOT RUN: ${result.why}`;
  return `${result.name}: ran, ${result.ok ? 'passed' : 'FAILED'}${result.detail ? `: ${result.detail}` : ''}`;
}

export interface Report {
  /** The block printed at the end, one line per stage, then the closing line. */
  lines: string[];
  /** The last line: `N passed, N failed[, N skipped]`, then every stage that failed or did not run. */
  closing: string;
  exitCode: number;
}

/**
 * The end of the run. Tests and scenarios are counted; a stage that failed without counting a
 * failed test (a type error, a lint problem, a tool that could not be installed, a suite that
 * crashed) counts as one failure, and a stage that did not run counts as one failure too: the
 * closing line never says `0 failed` for a run that did not do everything. Passing needs every
 * stage run and passed, and at least one test passed.
 */
export function report(results: readonly StageResult[]): Report {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const problems: string[] = [];
  for (const name of STAGE_NAMES) {
    const result = results.find((r) => r.name === name);
    if (result === undefined) {
      failed += 1;
      problems.push(`${name} NOT RUN (no such stage in this run)`);
      continue;
    }
    if (!result.ran) {
      failed += 1;
      problems.push(`${name} NOT RUN: ${result.why}`);
      continue;
    }
    passed += result.passed;
    skipped += result.skipped;
    failed += result.ok ? result.failed : Math.max(result.failed, 1);
    if (!result.ok) problems.push(`${name} failed${result.detail ? ` (${result.detail})` : ''}`);
  }
  const counts = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
  const allOk = problems.length === 0 && failed === 0 && passed > 0;
  const closing = allOk
    ? `${counts} (${STAGE_NAMES.join(', ')}: all ran and passed)`
    : `${counts} (${problems.length > 0 ? problems.join('; ') : 'no test passed'})`;
  const lines = [
    '',
    'npm test, stage by stage:',
    ...STAGE_NAMES.map((name) => {
      const result = results.find((r) => r.name === name);
      return `  ${result ? stageLine(result) : `${name}: NOT RUN (no such stage in this run)`}`;
    }),
    closing,
  ];
  return { lines, closing, exitCode: allOk ? 0 : 1 };
}

/** A tool the tests drive, and the script that installs it (Debian's apt-get). */
export interface Tool {
  name: string;
  /** Its path when installed, else undefined. */
  find(): string | undefined;
  script: string;
  /** The tests that need it: said when it cannot be installed, since they then fail. */
  neededBy: string;
}

export interface ToolDeps {
  tools: readonly Tool[];
  /** Undefined when this process can run the install scripts (root, or sudo without a password); else why not. */
  cannotInstall(): string | undefined;
  /** Runs an install script; its exit code. */
  install(script: string): number;
}

/**
 * The tools stage: every tool the tests need is found, or installed with its script, or the stage
 * fails saying which tests will fail and the command to run. The tests that need a tool never skip
 * without it: they fail with the same advice (a skipped test would read as a pass here).
 */
export function ensureTools(deps: ToolDeps): StageResult {
  const found: string[] = [];
  const missing: string[] = [];
  let why: string | undefined;
  for (const tool of deps.tools) {
    const before = tool.find();
    if (before !== undefined) {
      found.push(`${tool.name} ${before}`);
      continue;
    }
    why ??= deps.cannotInstall();
    const code = why === undefined ? deps.install(tool.script) : undefined;
    const after = code === 0 ? tool.find() : undefined;
    if (after !== undefined) {
      found.push(`${tool.name} ${after} (installed now by ${tool.script})`);
      continue;
    }
    const reason =
      code === undefined
        ? why
        : code === 0
          ? `${tool.script} ran but ${tool.name} is still missing`
          : `${tool.script} exited ${code}`;
    missing.push(
      `${tool.name} is missing and could not be installed (${reason}): ${tool.neededBy} fails until \`sudo sh ${tool.script}\` installs it`,
    );
  }
  return {
    name: 'tools',
    ran: true,
    ok: missing.length === 0,
    passed: 0,
    failed: missing.length,
    skipped: 0,
    detail: [...missing, ...found].join('; '),
  };
}
