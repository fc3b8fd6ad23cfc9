/**
 * The docs say what the code does, both ways: every configuration key, `HOOKBOT_*` variable,
 * command-line flag and metric the code has is documented, and every one the docs name exists in the
 * code. The lists come from the code itself (the configuration schema, the variables it reads, the
 * commands as commander registers them, the metrics registry) and from the docs' text, so a key,
 * flag or metric added on one side only fails here. Generated docs stay generated: regenerating them
 * gives the committed files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { generateConfigFiles } from '../../scripts/gen-config-example.ts';
import { generateRulesDoc, RULES_DOC } from '../../scripts/gen-rules-doc.ts';
import { generateRulesSchema, RULES_SCHEMA } from '../../scripts/gen-rules-schema.ts';
import type { RegisterCommand } from '../../src/cli/command.ts';
import { buildProgram } from '../../src/cli/main.ts';
import { configKeys, leafKeys, type ConfigKey } from '../../src/config/config-keys.ts';
import { OTHER_VARIABLES } from '../../src/config/unknown-env.ts';
import { KNOWN_KINDS } from '../../src/events/index.ts';
import { exposureProblem } from '../../src/receiver/index.ts';
import { ACTION_RESULTS, createMetrics, EVALUATION_SOURCES, SWEEP_RESULTS } from '../../src/ops/metrics.ts';
import { actionDefinitions } from '../../src/rules/actions/index.ts';
import { CAR_OUTCOMES, QUEUE_MODES, REMOVAL_CODES } from '../../src/rules/queue/queue-events.ts';
import { decisionText, evaluate, loadRules } from '../../src/rules/index.ts';
import type { MergeRequestSnapshot } from '../../src/rules/engine/snapshot.ts';
import { codeWords, readDoc, ROOT, tableUnder } from '../helpers/docs-tables.ts';
import { expectGenerated } from '../helpers/generated.ts';
import { mergeRequest, NOW, rulesFrom } from '../rules/support.ts';

/** Every Markdown file a user reads: the README and docs/. */
const DOCS = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const text = (file: string) => readDoc(file);
const allDocs = DOCS.map((file) => ({ file, content: text(file) }));

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/** Where each documented thing is named: `thing -> files`. */
function namedIn(pattern: RegExp): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const { file, content } of allDocs)
    for (const match of content.matchAll(pattern)) {
      const name = match[1] ?? match[0];
      found.set(name, [...new Set([...(found.get(name) ?? []), file])]);
    }
  return found;
}

// ---------------------------------------------------------------------------------------------

describe('configuration keys', () => {
  const keys = configKeys();
  const all: ConfigKey[] = [];
  const walk = (list: readonly ConfigKey[]) => {
    for (const key of list) {
      all.push(key);
      if (key.children) walk(key.children);
    }
  };
  walk(keys);
  const names = new Set(all.map((key) => key.name));
  const sections = new Set(keys.map((key) => key.name));

  it('every key of the schema is in docs/configuration.md', () => {
    const reference = text('docs/configuration.md');
    expect(all.filter((key) => !reference.includes(`\`${key.name}\``)).map((key) => key.name)).toEqual([]);
  });

  /** Names the docs set like keys that are something else, each for its reason. */
  const NOT_KEYS: Record<string, string> = {
    'sandbox.ssh.port': 'a field of the object startSandbox() returns, in code (docs/sandbox.md)',
  };

  it('every key the docs name is a key of the schema', () => {
    // `rules.problems` and the like are fields of /status.json (docs/operations.md), not keys.
    const statusFields = new Set(
      tableUnder(text('docs/operations.md'), 'Status page').map((row) => codeWords(row[0]!)[0]!),
    );
    const unknown: string[] = [];
    for (const [name, files] of namedIn(/`([a-z_]+(?:\.[a-z_<>]+)+)`/g)) {
      const [section] = name.split('.');
      if (!sections.has(section!) || statusFields.has(name) || name.endsWith('.ts') || name.endsWith('.md'))
        continue;
      // The API's and the client's methods (`hooks.create`) share the names of sections.
      if (files.every((file) => file === 'docs/api-client.md' || file === 'docs/api-v3.md')) continue;
      if (name in NOT_KEYS) continue;
      // `scheduler.sweeps.<name>` stands for each sweep.
      const pattern = new RegExp(`^${name.replace(/\./g, '\\.').replace(/<[a-z_]+>/g, '[a-z_]+')}$`);
      if (![...names].some((key) => pattern.test(key))) unknown.push(`${name} (${files.join(', ')})`);
    }
    expect(unknown).toEqual([]);
  });

  // Issue 39: the lists were written by hand here, in docs/repository-rules.md and in the action;
  // now the action's `inRepositories` is the only source, rendered once in docs/rules.md.
  it('which actions repository rules may use is written once, generated in docs/rules.md, and the others point there', () => {
    const section =
      text('docs/rules.md').split('### Actions in repository rules')[1]?.split('\n### ')[0] ?? '';
    const [defaults = '', operator = ''] = section.split(' by default; ');
    const named = (part: string) => new Set(codeWords(part));
    const problems: string[] = [];
    for (const action of actionDefinitions) {
      const list = action.inRepositories === 'allowed' ? defaults : operator;
      if (!named(list).has(action.name))
        problems.push(
          `docs/rules.md#actions-in-repository-rules does not list ${action.name} as ${action.inRepositories}: run npx tsx scripts/gen-rules-doc.ts`,
        );
    }
    const allow = all.find((key) => key.name === 'rules.repository.allow')!;
    for (const [where, said] of [
      ['src/config/schema.ts (rules.repository.allow)', allow.description],
      ['docs/repository-rules.md', text('docs/repository-rules.md')],
    ] as const) {
      if (!said.includes('rules.md#actions-in-repository-rules'))
        problems.push(`${where} does not point to docs/rules.md#actions-in-repository-rules`);
      // A hand-written list names several actions in a row: `merge`, `move` and `queue`...
      const run = /(?:`?[a-z_]+`?, ){3,}`?[a-z_]+`?/.exec(said)?.[0];
      if (
        run &&
        codeWords(run.replace(/(^|, )([a-z_]+)/g, '$1`$2`')).filter((w) =>
          actionDefinitions.some((a) => a.name === w),
        ).length >= 4
      )
        problems.push(
          `${where} lists actions by hand (${run}): point to docs/rules.md#actions-in-repository-rules instead`,
        );
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

describe('HOOKBOT_* variables', () => {
  const fromSchema = leafKeys(configKeys()).flatMap((key) => (key.env === undefined ? [] : [key.env]));
  const declared = new Set([...fromSchema, ...OTHER_VARIABLES]);
  /** Variables the docs name that the bot does not read, each for its reason. */
  const NOT_READ_BY_THE_BOT: Record<string, string> = {
    HOOKBOT_PROT: 'the example of a misspelt variable (docs/configuration.md)',
  };
  /** Variables the tests read (docs/deployment.md, "Testing against PostgreSQL"). */
  const READ_BY_THE_TESTS = ['HOOKBOT_TEST_DATABASE_URL'];

  it('every variable the code reads is one it declares (a read the unknown-variable warning does not know is a false warning)', () => {
    const reads = new Set<string>();
    for (const file of filesUnder('src'))
      for (const match of readFileSync(path.join(ROOT, file), 'utf8').matchAll(
        /env(?:\.|\[['"])(HOOKBOT_[A-Z0-9_]+)/g,
      ))
        reads.add(match[1]!);
    expect(reads.size).toBeGreaterThan(0);
    expect([...reads].filter((name) => !declared.has(name))).toEqual([]);
  });

  it('every variable the code reads is documented', () => {
    const documented = namedIn(/\b(HOOKBOT_[A-Z0-9_]+)\b/g);
    expect([...declared].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });

  it('every variable the docs name is read', () => {
    const tests = filesUnder('test/helpers')
      .map((file) => readFileSync(path.join(ROOT, file), 'utf8'))
      .join('\n');
    const unread: string[] = [];
    for (const [name, files] of namedIn(/\b(HOOKBOT_[A-Z0-9_]+)\b/g)) {
      if (declared.has(name) || name in NOT_READ_BY_THE_BOT) continue;
      if (READ_BY_THE_TESTS.includes(name) && tests.includes(name)) continue;
      unread.push(`${name} (${files.join(', ')})`);
    }
    expect(unread).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

describe('command-line flags', async () => {
  // Every command file's register function, found by name: a new command is checked unasked.
  const registers: RegisterCommand[] = [];
  for (const file of readdirSync(path.join(ROOT, 'src/cli'))
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const module = (await import(path.join(ROOT, 'src/cli', file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module))
      if (/^register\w+Command$/.test(name) && typeof value === 'function')
        registers.push(value as RegisterCommand);
  }
  const program = buildProgram({ out: () => undefined, err: () => undefined }, () => undefined, registers);
  const commands: { path: string; flags: string[] }[] = [];
  const walk = (command: Command, prefix: string) => {
    for (const sub of command.commands) {
      const name = prefix ? `${prefix} ${sub.name()}` : sub.name();
      commands.push({ path: name, flags: sub.options.map((option) => option.long!).filter(Boolean) });
      walk(sub, name);
    }
  };
  walk(program, '');
  const everyFlag = new Set([
    ...commands.flatMap((command) => command.flags),
    ...program.options.map((option) => option.long!),
    '--help',
  ]);
  const cliDoc = text('docs/cli.md');

  /** The part of docs/cli.md under the heading of `hookbot <command>`, down to the next heading as high. */
  function sectionOf(command: string): string | undefined {
    const lines = cliDoc.split('\n');
    const start = lines.findIndex((line) =>
      new RegExp(`^#{2,6} \`hookbot ${command.replace(/ /g, ' ')}(?:[ \`])`).test(line),
    );
    if (start < 0) return undefined;
    const level = /^#+/.exec(lines[start]!)![0].length;
    const end = lines.findIndex(
      (line, index) => index > start && /^#+ /.test(line) && /^#+/.exec(line)![0].length <= level,
    );
    return lines.slice(start, end < 0 ? undefined : end).join('\n');
  }

  it('finds every command', () => {
    expect(commands.map((command) => command.path)).toEqual(
      expect.arrayContaining([
        'start',
        'serve',
        'sandbox',
        'sweep',
        'demo',
        'check',
        'explain',
        'state migrate',
      ]),
    );
  });

  it('every command that takes flags has its section in docs/cli.md, naming each of its flags', () => {
    const missing: string[] = [];
    for (const command of commands) {
      if (command.flags.length === 0) continue;
      const section = sectionOf(command.path);
      if (section === undefined) {
        missing.push(`hookbot ${command.path}: no section`);
        continue;
      }
      for (const flag of command.flags)
        if (!new RegExp(`${flag}(?![\\w-])`).test(section)) missing.push(`hookbot ${command.path} ${flag}`);
    }
    expect(missing).toEqual([]);
  });

  it('every flag docs/cli.md and the README’s table of commands name is a flag of hookbot', () => {
    const named = [...cliDoc.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((match) => match[0]);
    const readmeCommands = tableUnder(text('README.md'), 'Commands')
      .map((row) => row[0]!)
      .join(' ');
    named.push(...[...readmeCommands.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((match) => match[0]));
    expect([...new Set(named)].filter((flag) => !everyFlag.has(flag))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

describe('metrics', () => {
  const operations = text('docs/operations.md');
  const documented = tableUnder(operations, 'Metrics').map((row) => codeWords(row[0]!)[0]!);

  it('every metric the bot registers is documented, and every documented one is registered', async () => {
    const registered = createMetrics({ defaultMetrics: false })
      .registry.getMetricsAsArray()
      .map((metric) => metric.name);
    expect([...documented].sort()).toEqual([...registered].sort());
  });

  it('every metric the docs name anywhere is registered', () => {
    const registered = new Set(documented);
    const named = namedIn(/\b(hookbot_[a-z_]+_(?:total|seconds|depth|bytes))\b/g);
    expect([...named.keys()].filter((name) => !registered.has(name))).toEqual([]);
  });

  it('the label values documented are the closed sets of the code', () => {
    const values = (label: string) =>
      codeWords(tableUnder(operations, 'Label values').find((row) => row[0] === label)![1]!).sort();
    expect(values('`hookbot_rule_actions_total` `result`')).toEqual([...ACTION_RESULTS].sort());
    expect(values('`hookbot_sweep_runs_total` `result`')).toEqual([...SWEEP_RESULTS].sort());
    expect(values('`hookbot_evaluations_total` `source`')).toEqual([...EVALUATION_SOURCES].sort());
    expect(values('`hookbot_deliveries_total` `kind`')).toEqual([...KNOWN_KINDS, 'unknown', 'other'].sort());
    expect(values('`hookbot_merge_queue_landed_total` `mode`')).toEqual([...QUEUE_MODES].sort());
    expect(values('`hookbot_merge_queue_rounds_total` `mode`')).toEqual([...QUEUE_MODES].sort());
    expect(values('`hookbot_merge_queue_removed_total` `reason`')).toEqual([...REMOVAL_CODES].sort());
    expect(values('`hookbot_merge_queue_car_builds_total` `outcome`')).toEqual([...CAR_OUTCOMES].sort());
    // The outcomes are a type: read from its declaration.
    const declaration = /export type DeliveryOutcome =([\s\S]*?);\n/.exec(
      readFileSync(path.join(ROOT, 'src/events/delivery.ts'), 'utf8'),
    )![1]!;
    const outcomes = [...declaration.matchAll(/\| '([a-z_]+)'/g)].map((match) => match[1]!);
    expect(values('`hookbot_deliveries_total` `outcome`')).toEqual(outcomes.sort());
  });
});

// ---------------------------------------------------------------------------------------------

describe('generated docs stay generated', () => {
  it('docs/configuration.md and config.example.yml (npx tsx scripts/gen-config-example.ts)', async () => {
    for (const file of await generateConfigFiles())
      expectGenerated(file.path, file.text, 'npx tsx scripts/gen-config-example.ts');
  });

  it('docs/rules.md (npx tsx scripts/gen-rules-doc.ts) and docs/rules.schema.json (npx tsx scripts/gen-rules-schema.ts)', async () => {
    expectGenerated(RULES_DOC, await generateRulesDoc(), 'npx tsx scripts/gen-rules-doc.ts');
    expectGenerated(RULES_SCHEMA, await generateRulesSchema(), 'npx tsx scripts/gen-rules-schema.ts');
  });
});

// ---------------------------------------------------------------------------------------------

describe('docs/rules.md\'s "Reads in explain as" is what explain prints', () => {
  const rulesDoc = text('docs/rules.md');
  const explainOf = (example: unknown, snapshot: MergeRequestSnapshot): string => {
    const set = rulesFrom(
      `rules:\n  - name: r\n    on: [merge_request.update]\n    do:\n      - ${JSON.stringify(example)}\n`,
    );
    const evaluation = evaluate(set, snapshot, { now: NOW });
    const execution = { itemKey: 'x', dryRun: true, calls: [], headMoved: false, counts: {} };
    return decisionText({ itemKey: 'x', at: NOW, dryRun: true, evaluation, execution } as never);
  };
  const update = { kind: 'merge_request', action: 'update', byBot: false } as const;

  // Issue 37: the queue's line was its describe, which explain prints only when it plans nothing.
  it.each(
    actionDefinitions.filter((definition) => definition.explained !== undefined).map((d) => [d.name, d]),
  )(
    '%s: the planned line on a merge request into master, and the describe when held back',
    (_name, definition) => {
      const example =
        definition.example === null ? definition.name : { [definition.name]: definition.example };
      const planned = `→ ${definition.name}: ${definition.explained!.planned}`;
      expect(explainOf(example, mergeRequest('mr-green', { trigger: update }))).toContain(`  ${planned}\n`);
      const params = definition.params.parse(definition.example);
      expect(
        explainOf(example, mergeRequest('mr-green', { trigger: update, work_in_progress: true })),
      ).toContain(`✗ ${definition.describe(params)}: held back`);
      expect(rulesDoc).toContain(`- Reads in explain as: \`${planned}\` when it plans its call (`);
      expect(rulesDoc).toContain(`; \`${definition.describe(params)}\` when it plans none`);
    },
  );

  it("the queue's line, as the docs write it, is what explain prints when the rule queues a merge request", () => {
    const section = rulesDoc.slice(rulesDoc.indexOf('### `queue`'));
    const line = /- Reads in explain as: (.*)/.exec(section)![1]!;
    const said = /^`([^`]+)`/.exec(line)?.[1] ?? line;
    const queue = actionDefinitions.find((definition) => definition.name === 'queue')!;
    expect(explainOf({ queue: queue.example }, mergeRequest('mr-green', { trigger: update }))).toContain(
      said,
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe('docs/cli.md cites the shipped rules/default.yml where its rules are', () => {
  // Issue 37: the explain example named each rule one line above where it is.
  it('every rule cited as (rules/default.yml:N) is a rule of the shipped file, at line N; the count is the file’s', async () => {
    const cli = text('docs/cli.md');
    const shipped = (await loadRules(path.join(ROOT, 'rules'))).byProject('acme/web').rules;
    const lines = new Map(shipped.map((rule) => [rule.name, rule.source?.line]));
    const cited = [...cli.matchAll(/^\s*[✓✗-] (.+?) \(rules\/default\.yml:(\d+)\)/gm)].map((match) => ({
      rule: match[1]!,
      line: Number(match[2]),
    }));
    expect(cited.length).toBeGreaterThan(0);
    for (const { rule, line } of cited) expect({ rule, line }).toEqual({ rule, line: lines.get(rule) });
    const example = cli.slice(cli.indexOf('With the default rules (as `hookbot start` runs them)'));
    expect(/^(\d+) rules, /m.exec(example)?.[1]).toBe(String(shipped.length));
  });
});

// ---------------------------------------------------------------------------------------------

describe('docs/sandbox.md: the standalone sandbox and serve in a container', () => {
  // Issue 37: the path did not say that serve in a container needs HOOKBOT_HOST or status credentials.
  it('quotes the refusal serve gives in a container, and names the variables that answer it', () => {
    const sandboxDoc = text('docs/sandbox.md');
    const section = sandboxDoc.slice(
      sandboxDoc.indexOf('### The bot against a standalone sandbox'),
      sandboxDoc.indexOf('### What a build can reach'),
    );
    const refusal = exposureProblem({ host: '0.0.0.0', authenticated: false, publicOps: false })!;
    const quoted = /`hookbot serve: could not start: ([^`]*?)\.\.\.`/.exec(section.replace(/\s+/g, ' '))?.[1];
    expect(quoted).toBeDefined();
    expect(refusal.startsWith(quoted!.trim())).toBe(true);
    for (const variable of ['HOOKBOT_HOST=127.0.0.1', 'HOOKBOT_STATUS_USERNAME', 'HOOKBOT_STATUS_PASSWORD']) {
      expect(refusal).toContain(variable);
      expect(section).toContain(variable);
    }
  });
});
