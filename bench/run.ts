/**
 * `npm run bench`: runs every `bench/*.bench.ts` (or those named on the command line), each side by
 * side with its baseline in the same run, and writes `bench/results/latest.json` (one object per
 * benchmark, stamped with the date, Node version and CPU model), the README's short table (result,
 * target, met: bench/targets.ts) and the full figures in docs/benchmarks.md.
 * A partial run (names given) keeps the other benchmarks' last figures; `--tables` runs nothing and
 * rewrites both tables from `latest.json`.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { summarise } from './targets.ts';

type Figures = Record<string, number | string>;

const RESULTS = new URL('./results/latest.json', import.meta.url);
const README = new URL('../README.md', import.meta.url);
const DETAILS = new URL('../docs/benchmarks.md', import.meta.url);
const BEGIN = '<!-- bench:begin -->';
const END = '<!-- bench:end -->';

const tablesOnly = process.argv.includes('--tables');
const wanted = tablesOnly ? [] : process.argv.slice(2);
const all = readdirSync(new URL('.', import.meta.url))
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''))
  .sort();
const names = tablesOnly ? [] : wanted.length > 0 ? wanted : all;
for (const name of names)
  if (!all.includes(name)) throw new Error(`no benchmark named ${name} (have: ${all.join(', ')})`);

const previous = existsSync(RESULTS)
  ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>)
  : {};
const results: Record<string, unknown> = { ...previous };
const machine = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
};

for (const name of names) {
  process.stdout.write(`bench ${name} ... `);
  const started = performance.now();
  const module = (await import(`./${name}.bench.ts`)) as { run: () => Promise<Figures> };
  const figures = await module.run();
  results[name] = { ...figures, ...machine };
  console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
  console.log(JSON.stringify(figures));
}

// The receiver's object carries Probot's figures too (issue 8 names them there): measured by the
// probot benchmark, hookbot's receiver and a minimal Probot app side by side in that benchmark's rounds.
const receiver = results.receiver as Figures | undefined;
const probot = results.probot as Figures | undefined;
if (receiver && probot) {
  receiver.probot_rps = probot.probot_rps!;
  receiver.probot_ratio = probot.ratio!;
}

writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
await replaceBetweenMarkers(README, summaryTable(results));
await replaceBetweenMarkers(DETAILS, figuresTable(results));

/** The README's table: one short row per benchmark. */
function summaryTable(all: Record<string, unknown>): string {
  const rows = Object.entries(all).map(([name, value]) => {
    const { result, target, met } = summarise(name, value as Figures);
    return `| ${name} | ${result} | ${target} | ${met} |`;
  });
  return ['| benchmark | result | target | met |', '|---|---|---|---|', ...rows].join('\n');
}

/** docs/benchmarks.md's table: every figure, one benchmark per row, with the machine. */
function figuresTable(all: Record<string, unknown>): string {
  const rows = Object.entries(all).map(([name, value]) => {
    const f = value as Figures;
    const ratio = f.ratio === undefined ? '' : `**${f.ratio}x**`;
    const rest = Object.entries(f)
      .filter(([k]) => !['ratio', 'date', 'node', 'cpu', 'cores'].includes(k))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    return `| ${name} | ${ratio} | ${rest} | ${f.node} on ${f.cpu} (${f.cores} cores), ${String(f.date).slice(0, 10)} |`;
  });
  return ['| benchmark | ratio vs baseline | figures | machine |', '|---|---|---|---|', ...rows].join('\n');
}

/** Writes the table between the file's markers, formatted as `prettier --check` (in `npm run lint`) expects. */
async function replaceBetweenMarkers(file: URL, table: string): Promise<void> {
  if (!existsSync(file)) return;
  const text = readFileSync(file, 'utf8');
  if (!text.includes(BEGIN) || !text.includes(END)) return;
  const updated = `${text.slice(0, text.indexOf(BEGIN) + BEGIN.length)}\n${table}\n${text.slice(text.indexOf(END))}`;
  const path = fileURLToPath(file);
  const options = (await prettier.resolveConfig(path)) ?? {};
  writeFileSync(file, await prettier.format(updated, { ...options, filepath: path }));
}
