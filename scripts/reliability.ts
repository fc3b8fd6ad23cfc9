/**
 * `npm run test:reliability`: hookbot under crashes, a server outage, bad input, bad rules and
 * configs, and the secrets check, each against the sandbox with the bot as a real process. Prints
 * each scenario's figures and a summary; exits 1 when any expectation failed.
 *
 *   npm run test:reliability                      # full sizes (docs/reliability.md)
 *   RELIABILITY_SMALL=1 npm run test:reliability  # the small configuration CI runs
 *   npm run test:reliability -- crash bad-input   # some scenarios only
 *
 * The secrets scenario searches the output of every bot process the run started, so it runs last.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { backlogScenario } from '../test/reliability/backlog.ts';
import { allBotOutput } from '../test/reliability/bot-process.ts';
import { badInputScenario } from '../test/reliability/bad-input.ts';
import { badFilesScenario } from '../test/reliability/bad-files.ts';
import { crashScenario } from '../test/reliability/crash.ts';
import { modelScenario } from '../test/reliability/model.ts';
import { outageScenario } from '../test/reliability/outage.ts';
import { replicasScenario } from '../test/reliability/replicas.ts';
import { addTotals, zeroTotals, type ScenarioResult } from '../test/reliability/report.ts';
import { secretsScenario } from '../test/reliability/secrets.ts';
import { readSizes, type Sizes } from '../test/reliability/sizes.ts';
import { trainReplicasScenario } from '../test/reliability/train-replicas.ts';

const scenarios: Record<string, (sizes: Sizes) => Promise<ScenarioResult>> = {
  crash: crashScenario,
  replicas: replicasScenario,
  'train-replicas': trainReplicasScenario,
  outage: outageScenario,
  'bad-input': badInputScenario,
  'bad-files': badFilesScenario,
  backlog: backlogScenario,
  model: modelScenario,
  secrets: secretsScenario,
};

const wanted = process.argv.slice(2);
for (const name of wanted)
  if (!(name in scenarios)) {
    console.error(`no scenario named ${name} (have: ${Object.keys(scenarios).join(', ')})`);
    process.exit(2);
  }
const names = wanted.length > 0 ? wanted : Object.keys(scenarios);
const sizes = readSizes();
console.log(`hookbot reliability suite (${sizes.small ? 'small' : 'full'} configuration)`);

const results: ScenarioResult[] = [];
for (const name of names) {
  console.log(`\n== ${name}`);
  const started = performance.now();
  let result: ScenarioResult;
  try {
    result = await scenarios[name]!(sizes);
  } catch (error) {
    // A scenario that could not finish is a failure of the run, with the reason shown.
    result = {
      name,
      seconds: (performance.now() - started) / 1000,
      figures: {},
      failures: [
        `the scenario did not finish: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      ],
      totals: {},
    };
  }
  results.push(result);
  for (const [key, value] of Object.entries(result.figures)) console.log(`  ${key}: ${value}`);
  console.log(`  ${result.failures.length === 0 ? 'ok' : 'FAILED'} in ${result.seconds.toFixed(1)} s`);
  for (const failure of result.failures) console.log(`  ! ${failure.replaceAll('\n', '\n    ')}`);
}

if (results.some((r) => r.failures.length > 0)) {
  // Every bot's output, for the report of what went wrong.
  const dir =
    process.env.RELIABILITY_LOG_DIR ?? mkdtempSync(path.join(tmpdir(), 'hookbot-reliability-logs-'));
  mkdirSync(dir, { recursive: true });
  for (const [i, { label, text }] of allBotOutput().entries())
    writeFileSync(
      path.join(dir, `${String(i).padStart(2, '0')}-${label.replace(/[^a-z0-9]+/gi, '-')}.log`),
      text,
    );
  console.log(`\nbot output of this run: ${dir}`);
}

const totals = zeroTotals();
for (const result of results) addTotals(totals, result.totals);
const failed = results.filter((r) => r.failures.length > 0);
console.log('\n== summary');
console.log(`  deliveries sent:       ${totals.sent}`);
console.log(`  accepted (202):        ${totals.accepted}`);
console.log(`  processed:             ${totals.processed}`);
console.log(`  lost:                  ${totals.lost}`);
console.log(`  duplicated:            ${totals.duplicated}`);
console.log(`  bad inputs tried:      ${totals.badInputs} (wrong answers: ${totals.wrongAnswers})`);
console.log(`  bad rule/config files: ${totals.badFiles}`);
console.log(`  kill -9:               ${totals.kills}`);
console.log(`  crashes:               ${totals.crashes}`);
console.log(`  secrets in output:     ${totals.leaks}`);
console.log(
  `  scenarios: ${results.length - failed.length} passed, ${failed.length} failed${failed.length ? ` (${failed.map((r) => r.name).join(', ')})` : ''}`,
);
process.exit(failed.length === 0 ? 0 : 1);
