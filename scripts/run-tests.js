#!/usr/bin/env node
// Runs vitest once and ends with the plain summary line CI reads: "N passed, N failed".
// vitest's own summary is for humans; the JSON reporter gives us exact counts.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

const out = '.vitest-results.json';
rmSync(out, { force: true });
const args = [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${out}`,
  ...process.argv.slice(2),
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
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(run.status === 0 && failed === 0 && passed > 0 ? 0 : 1);
