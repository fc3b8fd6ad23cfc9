#!/usr/bin/env node
// Runs vitest once and ends with the plain summary line CI reads: "N passed, N failed".
// vitest's own summary is for humans; the JSON reporter gives us exact counts.
// With --reliability, the reliability suite's small configuration runs after a green vitest run
// (about 2 minutes; docs/reliability.md), each scenario counted as one test in the summary line.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

const withReliability = process.argv.includes('--reliability');
const vitestArgs = process.argv.slice(2).filter((arg) => arg !== '--reliability');

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

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const report = JSON.parse(readFileSync(out, 'utf8'));
  passed = report.numPassedTests;
  failed = report.numFailedTests + (report.numRuntimeErrorTestSuites ?? 0);
  skipped = report.numPendingTests + report.numTodoTests;
  // A file that fails to load counts as a failure even if it holds no test we could count.
  for (const file of report.testResults ?? [])
    if (file.status === 'failed' && file.assertionResults.length === 0) failed++;
} catch (error) {
  console.error(`could not read the test report ${out}: ${error.message}`);
  failed = Math.max(failed, 1);
}
let status = run.status;
if (withReliability && run.status === 0 && failed === 0) {
  const suite = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/reliability.ts'], {
    env: { ...process.env, RELIABILITY_SMALL: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  process.stdout.write(suite.stdout ?? '');
  const scenarios = /scenarios: (\d+) passed, (\d+) failed/.exec(suite.stdout ?? '');
  passed += Number(scenarios?.[1] ?? 0);
  // A run that printed no summary (it crashed) is one failure at least.
  failed += scenarios ? Number(scenarios[2]) : 1;
  if (suite.status !== 0) status = suite.status ?? 1;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(status === 0 && failed === 0 && passed > 0 ? 0 : 1);
