/**
 * `npm test`'s stages and closing line (scripts/test-stages.ts), with stub stage runners: it is the
 * ordering and the reporting that are tested here. Every stage runs whatever the others did, and
 * the closing line never hides a stage that failed or did not run.
 */
import { describe, expect, it } from 'vitest';
import {
  ensureTools,
  report,
  runStages,
  STAGE_NAMES,
  type Stage,
  type StageName,
  type StageResult,
  type Tool,
} from '../../scripts/test-stages.ts';

const passedStage = (name: StageName, passed = 0): StageResult => ({
  name,
  ran: true,
  ok: true,
  passed,
  failed: 0,
  skipped: 0,
  detail: '',
});

/** Stub runners: each records that it ran and answers what it is given. */
function stubs(answers: Partial<Record<StageName, StageResult | Error>>) {
  const ran: StageName[] = [];
  const stages: Stage[] = STAGE_NAMES.map((name) => ({
    name,
    run: () => {
      ran.push(name);
      const answer =
        answers[name] ?? passedStage(name, name === 'vitest' ? 10 : name === 'reliability' ? 8 : 0);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  }));
  return { stages, ran };
}

const quiet = () => {};

describe('npm test stage by stage', () => {
  it('all ran and passed: the counts, exit 0, and every stage said', async () => {
    const { stages, ran } = stubs({});
    const results = await runStages(stages, quiet);
    expect(ran).toEqual(['tools', 'typecheck', 'lint', 'vitest', 'reliability']);
    const end = report(results);
    expect(end.exitCode).toBe(0);
    expect(end.closing).toBe(
      '18 passed, 0 failed (tools, typecheck, lint, vitest, reliability: all ran and passed)',
    );
    expect(end.lines).toEqual([
      '',
      'npm test, stage by stage:',
      '  tools: ran, passed',
      '  typecheck: ran, passed',
      '  lint: ran, passed',
      '  vitest: ran, passed',
      '  reliability: ran, passed',
      end.closing,
    ]);
  });

  it('a vitest failure does not stop the reliability suite, and both results are on the closing line', async () => {
    const { stages, ran } = stubs({
      vitest: {
        name: 'vitest',
        ran: true,
        ok: false,
        passed: 1200,
        failed: 3,
        skipped: 2,
        detail: '1200 passed, 3 failed, 2 skipped',
      },
      reliability: {
        name: 'reliability',
        ran: true,
        ok: true,
        passed: 8,
        failed: 0,
        skipped: 0,
        detail: '8 scenarios passed, 0 failed',
      },
    });
    const end = report(await runStages(stages, quiet));
    expect(ran).toContain('reliability');
    expect(end.exitCode).toBe(1);
    expect(end.closing).toBe(
      '1208 passed, 3 failed, 2 skipped (vitest failed (1200 passed, 3 failed, 2 skipped))',
    );
    expect(end.lines).toContain('  reliability: ran, passed: 8 scenarios passed, 0 failed');
  });

  it('a type error and a lint problem do not stop the tests; each counts as a failure', async () => {
    const failing = (name: StageName): StageResult => ({
      name,
      ran: true,
      ok: false,
      passed: 0,
      failed: 1,
      skipped: 0,
      detail: `npm run ${name} exited 2`,
    });
    const { stages, ran } = stubs({ typecheck: failing('typecheck'), lint: failing('lint') });
    const end = report(await runStages(stages, quiet));
    expect(ran).toEqual([...STAGE_NAMES]);
    expect(end.exitCode).toBe(1);
    expect(end.closing).toBe(
      '18 passed, 2 failed (typecheck failed (npm run typecheck exited 2); lint failed (npm run lint exited 2))',
    );
  });

  it('a stage whose runner could not start did not run: said with why, counted as a failure, the next still runs', async () => {
    const { stages, ran } = stubs({ vitest: new Error('could not start vitest: spawn npx ENOENT') });
    const results = await runStages(stages, quiet);
    expect(ran).toEqual([...STAGE_NAMES]);
    expect(results.find((r) => r.name === 'vitest')).toEqual({
      name: 'vitest',
      ran: false,
      why: 'could not start vitest: spawn npx ENOENT',
    });
    const end = report(results);
    expect(end.exitCode).toBe(1);
    expect(end.closing).toBe('8 passed, 1 failed (vitest NOT RUN: could not start vitest: spawn npx ENOENT)');
    expect(end.lines).toContain('  vitest: NOT RUN: could not start vitest: spawn npx ENOENT');
  });

  it('a stage missing from the run is reported as not run, never as a pass', () => {
    const end = report([
      passedStage('tools'),
      passedStage('typecheck'),
      passedStage('lint'),
      passedStage('vitest', 10),
    ]);
    expect(end.exitCode).toBe(1);
    expect(end.closing).toBe('10 passed, 1 failed (reliability NOT RUN (no such stage in this run))');
  });

  it('a stage that failed without counting a test (a crashed suite) is one failure at least', () => {
    const end = report([
      passedStage('tools'),
      passedStage('typecheck'),
      passedStage('lint'),
      passedStage('vitest', 10),
      {
        name: 'reliability',
        ran: true,
        ok: false,
        passed: 0,
        failed: 0,
        skipped: 0,
        detail: 'it printed no summary (exit 1)',
      },
    ]);
    expect(end.closing).toBe('10 passed, 1 failed (reliability failed (it printed no summary (exit 1)))');
  });

  it('nothing passed is no success, even with nothing failed', () => {
    const end = report(STAGE_NAMES.map((name) => passedStage(name)));
    expect(end.exitCode).toBe(1);
    expect(end.closing).toBe('0 passed, 0 failed (no test passed)');
  });

  it('prints each stage as it starts and ends', async () => {
    const lines: string[] = [];
    await runStages(stubs({ lint: new Error('stopped by SIGINT') }).stages, (line) => lines.push(line));
    expect(lines).toContain('\n== npm test: lint');
    expect(lines).toContain('== npm test: lint: NOT RUN: stopped by SIGINT');
    expect(lines).toContain('== npm test: reliability: ran, passed');
  });
});

describe('the tools stage', () => {
  function tool(
    name: string,
    installed: { now: boolean; afterInstall: boolean },
  ): Tool & { installs: number } {
    const t = {
      name,
      installs: 0,
      script: `scripts/install-${name}.sh`,
      neededBy: `test/${name}.test.ts`,
      find: () =>
        installed.now || (installed.afterInstall && t.installs > 0) ? `/usr/bin/${name}` : undefined,
    };
    return t;
  }

  it('finds what is there and installs what is missing, when it can', () => {
    const wrk = tool('wrk', { now: false, afterInstall: true });
    const chromium = tool('chromium', { now: true, afterInstall: true });
    const scripts: string[] = [];
    const result = ensureTools({
      tools: [wrk, chromium],
      cannotInstall: () => undefined,
      install: (script) => {
        scripts.push(script);
        wrk.installs++;
        return 0;
      },
    });
    expect(scripts).toEqual(['scripts/install-wrk.sh']);
    expect(result).toEqual({
      name: 'tools',
      ran: true,
      ok: true,
      passed: 0,
      failed: 0,
      skipped: 0,
      detail: 'wrk /usr/bin/wrk (installed now by scripts/install-wrk.sh); chromium /usr/bin/chromium',
    });
  });

  it('without root (or no network): fails, naming the tests that will fail and the command to run', () => {
    const result = ensureTools({
      tools: [
        tool('wrk', { now: false, afterInstall: true }),
        tool('chromium', { now: false, afterInstall: true }),
      ],
      cannotInstall: () => 'not root, and sudo is missing or asks for a password',
      install: () => {
        throw new Error('must not be called');
      },
    });
    expect(result.ran && result.ok).toBe(false);
    expect(result.ran && result.failed).toBe(2);
    expect(result.ran && result.detail).toBe(
      'wrk is missing and could not be installed (not root, and sudo is missing or asks for a password): test/wrk.test.ts fails until `sudo sh scripts/install-wrk.sh` installs it; ' +
        'chromium is missing and could not be installed (not root, and sudo is missing or asks for a password): test/chromium.test.ts fails until `sudo sh scripts/install-chromium.sh` installs it',
    );
    const end = report([result, ...STAGE_NAMES.slice(1).map((name) => passedStage(name, 5))]);
    expect(end.exitCode).toBe(1);
    expect(end.closing).toMatch(/^20 passed, 2 failed \(tools failed \(wrk is missing/);
  });

  it('an install script that fails (apt-get without network) is said with its exit code', () => {
    const result = ensureTools({
      tools: [tool('wrk', { now: false, afterInstall: false })],
      cannotInstall: () => undefined,
      install: () => 100,
    });
    expect(result.ran && result.detail).toMatch(
      /^wrk is missing and could not be installed \(scripts\/install-wrk\.sh exited 100\)/,
    );
  });
});
