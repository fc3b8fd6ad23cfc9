/**
 * Bad rules and configs: every case of the corpus (corpus.ts) is refused with exactly the lines it
 * lists. Rule files through `checkRules` and `loadRules` (file:line:column); configurations and
 * state files through `hookbot serve`, which must exit 1 with the problems and leave a refused state
 * file untouched. Then a running bot: broken files dropped into its rules folder are refused and the
 * last good rules stay in force for the next delivery; a good file is taken.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkRules } from '../../src/rules/grammar/check.ts';
import { loadRules } from '../../src/rules/grammar/load.ts';
import { formatProblem } from '../../src/rules/grammar/problem.ts';
import { spawnHookbot, startBotProcess, waitFor, type BotProcess } from './bot-process.ts';
import { fill, readCorpus, writeCase, type CorpusCase } from './corpus.ts';
import { goodHeaders, issuePayload, send } from './deliveries.ts';
import { botEnv, DELIVERY_ONLY_CONFIG, freePort, makeSecret, readStatus, writeConfig } from './harness.ts';
import { Expectations, notableLines, type ScenarioResult } from './report.ts';
import type { Sizes } from './sizes.ts';
import { createWorld, writeRules, type World } from './world.ts';

const HEADER = 'hookbot serve: the configuration has problems:';
const PLACE = /^\S+:\d+:\d+: /;

function differences(got: readonly string[], want: readonly string[]): string {
  return `got\n      ${got.join('\n      ') || '(nothing)'}\n    expected\n      ${want.join('\n      ')}`;
}

async function ruleCases(
  expect: Expectations,
): Promise<{ tried: number; refusedByLoad: number; checkOnly: string[] }> {
  let refusedByLoad = 0;
  const checkOnly: string[] = [];
  const cases = readCorpus('rules');
  for (const c of cases) {
    const dir = mkdtempSync(path.join(tmpdir(), `hookbot-rules-${c.name}-`));
    try {
      writeCase(c, dir);
      const want = c.expect.map((line) => fill(line, { dir }));
      const checked = (await checkRules(dir)).map(formatProblem);
      const loaded = (await loadRules(dir)).problems.map(formatProblem);
      expect.true(`rules ${c.name}: the corpus lists what to expect`, want.length > 0);
      expect.true(
        `rules ${c.name}: checkRules`,
        JSON.stringify(checked) === JSON.stringify(want),
        differences(checked, want),
      );
      expect.true(
        `rules ${c.name}: every problem has file:line:column`,
        checked.every((line) => PLACE.test(line)),
        checked.join('; '),
      );
      // What loadRules refuses (and so a running bot refuses) is a part of what checkRules says.
      const extra = loaded.filter((line) => !checked.includes(line));
      expect.true(
        `rules ${c.name}: loadRules reports nothing check does not`,
        extra.length === 0,
        extra.join('; '),
      );
      if (loaded.length > 0) refusedByLoad++;
      else checkOnly.push(c.name);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return { tried: cases.length, refusedByLoad, checkOnly };
}

/** `hookbot serve` on a bad configuration or state file: exit 1, exactly the expected lines. */
async function serveCase(
  part: 'config' | 'state',
  c: CorpusCase,
  secrets: { token: string; secret: string; inFile: string },
): Promise<string[]> {
  const failures: string[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), `hookbot-${part}-${c.name}-`));
  try {
    mkdirSync(path.join(dir, 'rules'));
    const file = writeCase(c, part === 'state' ? path.join(dir, 'state') : dir, { secret: secrets.inFile });
    const before = readFileSync(file);
    // Port 9 (discard) on loopback: nothing answers there, so a case that is not refused fails at
    // start instead of running against anything.
    const env: Record<string, string> = {
      HOOKBOT_API_URL: 'http://127.0.0.1:9',
      HOOKBOT_API_TOKEN: secrets.token,
      HOOKBOT_WEBHOOK_SECRET: secrets.secret,
      HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
      HOOKBOT_RULES: path.join(dir, 'rules'),
      HOOKBOT_PORT: '0',
    };
    for (const [name, value] of Object.entries(c.env)) {
      if (value === '') delete env[name];
      else env[name] = fill(value, { dir });
    }
    const args = part === 'config' && !env.HOOKBOT_CONFIG ? ['serve', '--config', file] : ['serve'];
    const run = spawnHookbot({ env, args }, `bad-files: ${part}/${c.name}`);
    const { code } = await run.exited;
    const lines = run
      .output()
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.length > 0 && line !== HEADER);
    const want = c.expect.map((line) => fill(line, { dir, file }));
    if (want.length === 0) failures.push(`${part} ${c.name}: the corpus lists nothing to expect`);
    if (code !== 1) failures.push(`${part} ${c.name}: exit code ${code} (expected 1)`);
    if (JSON.stringify(lines) !== JSON.stringify(want))
      failures.push(`${part} ${c.name}: ${differences(lines, want)}`);
    if (part === 'state' && !readFileSync(file).equals(before))
      failures.push(`state ${c.name}: the refused state file was changed`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return failures;
}

/** Runs the serve cases a few at a time (each is a process start, about a second). */
async function serveCases(expect: Expectations): Promise<number> {
  const cases = [
    ...readCorpus('config').map((c) => ['config', c] as const),
    ...readCorpus('state').map((c) => ['state', c] as const),
  ];
  const secrets = {
    token: makeSecret('api-token'),
    secret: makeSecret('hook-secret'),
    inFile: makeSecret('file-secret'),
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 3 }, async () => {
      while (next < cases.length) {
        const [part, c] = cases[next++]!;
        for (const failure of await serveCase(part, c, secrets)) expect.true(failure, false);
      }
    }),
  );
  return cases.length;
}

/**
 * A running bot keeps its last good rules: its rule comments `seen`. Broken replacements are dropped
 * in (the default file rewritten with a typo, a broken project file added); each is refused and the
 * next delivery still gets `seen`. Then a good replacement commenting `changed` is taken.
 */
async function runningBot(expect: Expectations, world: World): Promise<Record<string, string>> {
  const secret = makeSecret('hook-secret');
  const rule = (text: string, extra = '') =>
    [
      'rules:',
      '  - name: acknowledge',
      '    on: [issue.open, issue.update]',
      extra,
      `    do: [ { comment: '${text}' } ]`,
      '',
    ]
      .filter((line) => line !== '')
      .join('\n')
      .concat('\n');
  const rulesDir = writeRules(world.dir, { 'default.yml': rule('seen') });
  const ids = world.addIssues(4);
  let bot: BotProcess | undefined;
  const steps: Record<string, string> = {};
  try {
    bot = await startBotProcess(
      {
        env: botEnv({
          world,
          secret,
          rulesDir,
          statePath: path.join(world.dir, 'state', 'hookbot.json'),
          port: await freePort(),
          configFile: writeConfig(world.dir, 'config.yml', DELIVERY_ONLY_CONFIG),
        }),
      },
      'bad-files: running bot',
    );
    const live = bot;
    const deliverAndRead = async (n: number): Promise<string> => {
      const result = await send(live.hookUrl, {
        body: issuePayload({ id: ids[n]!, iid: n + 1, projectId: world.projectId }),
        headers: goodHeaders(secret),
      });
      if (result.kind !== 'answer' || result.status !== 202)
        return `not accepted (${JSON.stringify(result)})`;
      const body = await waitFor(
        `a comment on issue ${ids[n]}`,
        () => world.botComments().get(ids[n]!)?.[0],
        20_000,
      ).catch(() => '(no comment)');
      return body.replace(/\s*<!--.*-->\s*$/s, '');
    };
    const reloaded = (refused: boolean, problem?: RegExp) =>
      waitFor(
        `the rules ${refused ? 'refused' : 'taken'}`,
        async () => {
          const status = await readStatus(live.baseUrl);
          if (!status || status.rules.refused !== refused) return undefined;
          if (problem && !status.rules.problems.some((p) => problem.test(p))) return undefined;
          return status.rules.problems;
        },
        20_000,
      );

    steps.first = await deliverAndRead(0);
    expect.equal('running bot: comment with the first rules', steps.first, 'seen');

    // A typo in the default file, in the very rule that would change the comment.
    writeFileSync(
      path.join(rulesDir, 'default.yml'),
      rule('changed', '    if: [ { titel: { matches: x } } ]'),
    );
    const problems = await reloaded(true, /unknown condition "titel"/).catch((error: unknown) => [
      String(error),
    ]);
    expect.true(
      'running bot: the broken default file refused with its place',
      problems.some((p) => /default\.yml:\d+:\d+: unknown condition "titel"/.test(p)),
      problems.join('; '),
    );
    steps.after_broken_default = await deliverAndRead(1);
    expect.equal('running bot: comment after a broken default file', steps.after_broken_default, 'seen');

    // A project file for this very project, broken YAML.
    mkdirSync(path.join(rulesDir, 'acme'), { recursive: true });
    writeFileSync(path.join(rulesDir, 'acme', 'web.yml'), 'rules:\n  - name: web\n    on: [issue.open\n');
    const yamlProblems = await reloaded(true, /acme\/web\.yml:\d+:\d+: YAML/).catch((error: unknown) => [
      String(error),
    ]);
    expect.true(
      'running bot: the broken project file refused with its place',
      yamlProblems.some((p) => /acme\/web\.yml:\d+:\d+: YAML/.test(p)),
      yamlProblems.join('; '),
    );
    steps.after_broken_project_file = await deliverAndRead(2);
    expect.equal('running bot: comment after a broken project file', steps.after_broken_project_file, 'seen');

    // Both fixed: the new rules are taken.
    rmSync(path.join(rulesDir, 'acme'), { recursive: true, force: true });
    writeFileSync(path.join(rulesDir, 'default.yml'), rule('changed'));
    await reloaded(false).catch((error: unknown) =>
      expect.true('running bot: the good rules taken', false, String(error)),
    );
    steps.after_fix = await deliverAndRead(3);
    expect.equal('running bot: comment after the fix', steps.after_fix, 'changed');

    const code = await live.stop();
    bot = undefined;
    if (code !== 0)
      expect.true(`running bot: exit code ${code} on SIGTERM`, false, notableLines(live.output()).join('\n'));
  } finally {
    await bot?.kill9();
  }
  return steps;
}

export async function badFilesScenario(_sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const rules = await ruleCases(expect);
  const served = await serveCases(expect);
  const world = await createWorld({ botToken: makeSecret('api-token'), label: 'bad-files' });
  let steps: Record<string, string> = {};
  try {
    steps = await runningBot(expect, world);
  } finally {
    await world.close();
  }
  return {
    name: 'bad-files',
    seconds: (performance.now() - started) / 1000,
    figures: {
      rule_files: rules.tried,
      rule_files_refused_by_load: rules.refusedByLoad,
      rule_files_reported_by_check_only: rules.checkOnly.join(', ') || 'none',
      configs_and_state_files: served,
      running_bot: Object.entries(steps)
        .map(([step, comment]) => `${step} -> ${comment}`)
        .join('; '),
    },
    failures: expect.failures,
    totals: { badFiles: rules.tried + served, crashes: 0 },
  };
}
