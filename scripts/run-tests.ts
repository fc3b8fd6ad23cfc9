/**
 * `npm test` (`node --import tsx scripts/run-tests.ts [vitest arguments]`): the tools the tests
 * drive, installed when missing; the type check; lint; vitest once (its JSON reporter gives exact
 * counts); the reliability suite's small configuration (about 2.5 minutes, docs/reliability.md, each
 * scenario counted as one test). Every stage runs whatever the others did, and the run ends with
 * each stage's outcome and the plain line CI reads, `N passed, N failed` (scripts/test-stages.ts).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureTools, report, runStages, type Stage, type StageName, type Tool } from './test-stages.ts';

// `--reliability` was how npm test asked for the reliability suite; it always runs now.
const vitestArgs = process.argv.slice(2).filter((arg) => arg !== '--reliability');

// Ctrl-C reaches the running stage's process too; the stages after it are reported as not run.
let interrupted: string | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    interrupted = `the run was stopped (${signal}) before it`;
  });

/** A stage that runs only while the run was not stopped; a process that cannot start did not run. */
function stage(name: StageName, run: () => ReturnType<Stage['run']>): Stage {
  return {
    name,
    run: () => {
      if (interrupted !== undefined) throw new Error(interrupted);
      return run();
    },
  };
}

/** An executable on PATH, like `command -v`. */
function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const file = path.join(dir, command);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

const TOOLS: Tool[] = [
  {
    name: 'wrk',
    find: () => onPath('wrk'),
    script: 'scripts/install-wrk.sh',
    neededBy: 'test/bench/wrk.test.ts',
  },
  {
    name: 'chromium',
    find: () => (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined),
    script: 'scripts/install-browser.sh',
    neededBy: 'test/status/*.browser.test.ts (the status page, the merge queues page)',
  },
];

/** Why this process cannot run the install scripts (Debian's apt-get, as root), or undefined. */
function cannotInstall(): string | undefined {
  if (onPath('apt-get') === undefined) return 'there is no apt-get here: the scripts use Debian packages';
  if (process.getuid?.() === 0) return undefined;
  const sudo = spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' });
  return sudo.status === 0 ? undefined : 'not root, and sudo is missing or asks for a password';
}

function npmRun(name: 'typecheck' | 'lint'): Stage {
  return stage(name, () => {
    const run = spawnSync('npm', ['run', '--silent', name], { stdio: 'inherit' });
    if (run.error) throw new Error(`could not start npm: ${run.error.message}`);
    if (run.status === null) throw new Error(`stopped by ${run.signal ?? 'a signal'}`);
    const ok = run.status === 0;
    return {
      name,
      ran: true,
      ok,
      passed: 0,
      failed: ok ? 0 : 1,
      skipped: 0,
      detail: ok ? '' : `npm run ${name} exited ${run.status}`,
    };
  });
}

const vitest = stage('vitest', () => {
  const out = '.vitest-results.json';
  rmSync(out, { force: true });
  const args = [
    'vitest',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${out}`,
    ...vitestArgs,
  ];
  const run = spawnSync('npx', args, { stdio: 'inherit' });
  if (run.error) throw new Error(`could not start vitest: ${run.error.message}`);
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let unread = '';
  try {
    const result = JSON.parse(readFileSync(out, 'utf8'));
    passed = result.numPassedTests;
    failed = result.numFailedTests + (result.numRuntimeErrorTestSuites ?? 0);
    skipped = result.numPendingTests + result.numTodoTests;
    // A file that failed with no failed test (it did not load; a beforeAll threw and its tests
    // were marked skipped) counts as one failure: its tests did not pass.
    for (const file of result.testResults ?? [])
      if (
        file.status === 'failed' &&
        !file.assertionResults.some((test: { status: string }) => test.status === 'failed')
      )
        failed++;
  } catch (error) {
    unread = `could not read the test report ${out}: ${(error as Error).message}`;
    failed = Math.max(failed, 1);
  }
  const ok = run.status === 0 && failed === 0 && unread === '';
  const counts = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
  const exit = run.status === 0 ? '' : `, vitest exited ${run.status ?? run.signal}`;
  return { name: 'vitest', ran: true, ok, passed, failed, skipped, detail: `${unread || counts}${exit}` };
});

const reliability = stage('reliability', () => {
  const suite = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/reliability.ts'], {
    env: { ...process.env, RELIABILITY_SMALL: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (suite.error) throw new Error(`could not start the reliability suite: ${suite.error.message}`);
  process.stdout.write(suite.stdout ?? '');
  const scenarios = /scenarios: (\d+) passed, (\d+) failed/.exec(suite.stdout ?? '');
  const passed = Number(scenarios?.[1] ?? 0);
  // A run that printed no summary (it crashed) is one failure at least.
  const failed = scenarios ? Number(scenarios[2]) : 1;
  const ok = suite.status === 0 && failed === 0;
  const detail = scenarios
    ? `${passed} scenarios passed, ${failed} failed`
    : `it printed no summary (exit ${suite.status ?? suite.signal})`;
  return { name: 'reliability', ran: true, ok, passed, failed, skipped: 0, detail };
});

const tools = stage('tools', () =>
  ensureTools({
    tools: TOOLS,
    cannotInstall,
    install: (script) => spawnSync('sh', [script], { stdio: 'inherit' }).status ?? 1,
  }),
);

const results = await runStages([tools, npmRun('typecheck'), npmRun('lint'), vitest, reliability]);
const end = report(results);
for (const line of end.lines) console.log(line);
process.exit(end.exitCode);
