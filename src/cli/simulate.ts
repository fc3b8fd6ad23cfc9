/**
 * `hookbot simulate --event FILE [--kind HEADER] [--rules DIR] [--api URL --token T] [--json]`:
 * what the bot would do with one delivery, without doing it. It finds the items the delivery
 * concerns, builds each one's snapshot, evaluates the project's rules with the bot's engine, and
 * hands the plan to the bot's executor in dry-run mode: the output is what `hookbot explain` would
 * show afterwards, every call described and none made.
 *
 * - With `--api` (and `--token`, or `HOOKBOT_API_TOKEN`), the item is read fresh through the API as
 *   the bot reads it (labels, head statuses, changed files). Only GETs: any other method is refused
 *   before it leaves the process (simulate-client.ts). Use the bot's token: loop prevention compares
 *   the event's user with the token's user, as the bot does.
 * - Without, the snapshot comes from the payload alone, and every fact it lacks is listed with what
 *   was assumed (payloads of that era carry no labels and no statuses). A push or a build names a
 *   branch or a commit, not an item: finding its merge requests needs the server.
 *
 * - A `queue` call is reported as the bot makes it: the merge queue's memory (a merge request taken
 *   out at its head is not queued again) is read from the bot's state, `--database` or `--state`
 *   (queue-memory.ts); without it, the answer says what it cannot tell.
 *
 * Exit 0 when every item was simulated; 1 when the rules, the file or the server had a problem, or
 * an item could not be simulated; 2 when the command line is wrong.
 */
import type { Hint, ItemRef } from '../events/index.ts';
import type { HookEvent } from '../events/index.ts';
import type { CliIo, RegisterCommand } from './command.ts';
import { triggerOf, type BotUser } from './simulate-delivery.ts';
import type { UnknownField } from './simulate-payload.ts';
import type { CompiledRuleSet, Evaluation, ExecutionReport, ItemSnapshot, Trigger } from '../rules/index.ts';
import type { Client } from '../api/index.ts';
import type { QueueMemory, QueueMemorySource } from './queue-memory.ts';

interface SimulateOptions {
  event: string;
  kind?: string;
  rules?: string;
  api?: string;
  token?: string;
  json?: boolean;
  /** The bot's state, for the merge queue's memory (queue-memory.ts). */
  state?: string;
  database?: string | boolean;
  databaseSchema?: string;
}

/** One item's simulation. */
interface ItemOutcome {
  itemKey: string;
  /** The rule file that applies, as a path. */
  rules: string;
  /** Offline only: what the payload does not say, and what was assumed. */
  unknown: UnknownField[];
  evaluation: Evaluation;
  execution: ExecutionReport;
}

/** Where the snapshots come from. */
interface Source {
  /** `api` or `payload`, for the JSON; `describe` for people. */
  name: 'api' | 'payload';
  describe: string;
  /** The items a hint concerns, or why they cannot be found. */
  itemsOf(hint: Hint): Promise<ItemRef[] | string>;
  /** The item's snapshot with the rules that apply, or why there is none. */
  snapshotOf(
    item: ItemRef,
    trigger: Trigger,
  ): Promise<
    { snapshot: ItemSnapshot; set: CompiledRuleSet; path: string; unknown: UnknownField[] } | string
  >;
  bot: BotUser | undefined;
  client: Client;
}

const usage = (io: CliIo, message: string): number => {
  io.err(`hookbot simulate: ${message}\n`);
  return 2;
};

export async function runSimulateCommand(options: SimulateOptions, io: CliIo): Promise<number> {
  const token = options.token ?? (options.api !== undefined ? process.env.HOOKBOT_API_TOKEN : undefined);
  if (options.token !== undefined && options.api === undefined)
    return usage(io, '--token needs --api URL (the server to read from)');
  if (options.api !== undefined && !token)
    return usage(io, '--api needs --token T (or HOOKBOT_API_TOKEN): the bot user’s token');
  if (options.api !== undefined && !/^https?:\/\/[^/]/.test(options.api))
    return usage(io, `--api must be the server's URL, e.g. https://git.example.com (got "${options.api}")`);

  // Loaded here so that `hookbot --help` stays fast.
  const { readDelivery } = await import('./simulate-delivery.ts');
  const { loadRules, formatProblem } = await import('../rules/index.ts');
  const { hintsOf } = await import('../events/index.ts');
  const { ApiError } = await import('../api/index.ts');

  const delivery = await readDelivery(options.event, options.kind);
  if (!delivery.ok) {
    io.err(`hookbot simulate: ${delivery.message}\n`);
    return delivery.usage ? 2 : 1;
  }
  const rulesDir = options.rules ?? (process.env.HOOKBOT_RULES || 'rules');
  const rules = await loadRules(rulesDir);
  if (rules.problems.length > 0) {
    io.err(
      `hookbot simulate: the rules have problems (the bot would refuse them; hookbot check lists them):\n${rules.problems.map((p) => `  ${formatProblem(p)}`).join('\n')}\n`,
    );
    return 1;
  }
  const ruleFileOf = (path: string): string => {
    const own = rules.files.find((file) => file.replace(/\.ya?ml$/, '').toLowerCase() === path.toLowerCase());
    const fallback = rules.files.find((file) => /^default\.ya?ml$/.test(file));
    if (own !== undefined) return `${rulesDir}/${own}`;
    return fallback !== undefined ? `${rulesDir}/${fallback}` : `${rulesDir} (no rules for ${path})`;
  };

  const hints = hintsOf(delivery.event);
  const head = `${delivery.header} from ${options.event}`;
  if (hints.length === 0) {
    const message = `${head}: it concerns no issue or merge request; the bot evaluates nothing`;
    const json = {
      event: delivery.header,
      file: options.event,
      source: options.api !== undefined ? 'api' : 'payload',
      dryRun: true,
      items: [],
      problems: [],
      remarks: [message],
    };
    if (options.json) io.out(`${JSON.stringify(json, null, 2)}\n`);
    else io.out(`${message}\n`);
    return 0;
  }

  const memorySource = queueMemorySource(options);
  if (typeof memorySource === 'string') return usage(io, memorySource);
  const { readQueueMemory } = await import('./queue-memory.ts');
  const memory = await readQueueMemory(memorySource, 'simulate');

  try {
    const source =
      options.api !== undefined && token
        ? await onlineSource(options.api, token, ruleFileOf, rules.byProject)
        : await offlineSource(delivery.event, ruleFileOf, rules.byProject);
    const report: Report = { head, header: delivery.header, source, outcomes: [], problems: [], remarks: [] };
    await simulateAll(source, hints, report.outcomes, report.problems, report.remarks, memory);
    await print(io, options, report);
    return report.problems.length > 0 ? 1 : 0;
  } catch (error) {
    if (error instanceof ApiError) {
      const what = error.status === undefined ? 'could not reach the server' : 'the server answered';
      io.err(`hookbot simulate: ${what}: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

/** Simulates every item of every hint; `problems` are items that could not be simulated. */
async function simulateAll(
  source: Source,
  hints: Hint[],
  outcomes: ItemOutcome[],
  problems: string[],
  remarks: string[],
  memory: QueueMemory,
) {
  const { evaluate, createExecutor } = await import('../rules/index.ts');
  const { createMemoryStore } = await import('../state/index.ts');
  const { itemKeyOf } = await import('../rules/index.ts');
  const { unreadMemoryRemark } = await import('./queue-memory.ts');
  // Dry run: the executor describes each call and touches neither the client nor the store. The
  // store holds the bot's queue entries only, read from its state: a merge request the queue took
  // out at its head is not queued again, as the bot says (issue 37).
  const store = createMemoryStore();
  await store.open();
  if (memory.read) for (const entry of memory.entries) await store.enqueue(entry);
  const executor = createExecutor({ client: source.client, store, dryRun: true });
  const now = Date.now();
  for (const hint of hints) {
    const items = await source.itemsOf(hint);
    if (typeof items === 'string') {
      problems.push(items);
      continue;
    }
    if (items.length === 0)
      remarks.push(
        `${describeHint(hint)}: no open merge request has it as its ${hint.target === 'branch' ? 'source branch' : 'head'}; the bot evaluates nothing`,
      );
    const trigger = triggerOf(hint.trigger, source.bot);
    // Offline the payload is all there is: a note's text and author are taken from it, as the
    // output's first line says (the bot itself reads them from the server by the note's id).
    if (source.name === 'payload' && trigger.kind === 'note') {
      if (hint.trigger.note !== undefined) trigger.note = hint.trigger.note;
      if (hint.trigger.actor.username !== undefined)
        trigger.actor = { id: hint.trigger.actor.id ?? 0, username: hint.trigger.actor.username };
    }
    for (const item of items) {
      const itemKey = itemKeyOf(item.type, item.projectId, item.id);
      const read = await source.snapshotOf(item, trigger);
      if (typeof read === 'string') {
        problems.push(`${itemKey}: ${read}`);
        continue;
      }
      const evaluation = evaluate(read.set, read.snapshot, { now });
      const execution = await executor.execute(evaluation, read.snapshot, { rules: read.set });
      outcomes.push({ itemKey, rules: read.path, unknown: read.unknown, evaluation, execution });
    }
  }
  const queues = outcomes.some((outcome) =>
    outcome.evaluation.plan.some((planned) => planned.call.op === 'mergeQueue.enqueue'),
  );
  if (queues)
    remarks.push(
      memory.read ? `queue: the bot's memory read from ${memory.from}` : unreadMemoryRemark(memory.why),
    );
}

/**
 * Where the bot's queue memory comes from: `--database [URL]` (its PostgreSQL, read-only), `--state
 * FILE` (a stopped bot's file); else HOOKBOT_DATABASE_URL, else HOOKBOT_STATE; else none. A string: a
 * command-line problem.
 */
function queueMemorySource(options: SimulateOptions): QueueMemorySource | string {
  if (options.state !== undefined && options.database !== undefined)
    return 'give --state or --database, not both';
  const schema = options.databaseSchema ?? 'public';
  if (options.database !== undefined) {
    const url = options.database === true ? process.env.HOOKBOT_DATABASE_URL : options.database;
    if (!url) return '--database needs the URL: --database=postgres://... or HOOKBOT_DATABASE_URL';
    return { database: url, schema };
  }
  if (options.state !== undefined) return { state: options.state };
  if (process.env.HOOKBOT_DATABASE_URL) return { database: process.env.HOOKBOT_DATABASE_URL, schema };
  if (process.env.HOOKBOT_STATE) return { state: process.env.HOOKBOT_STATE };
  return { none: "no state given: --state FILE (a stopped bot's) or --database URL" };
}

function describeHint(hint: Hint): string {
  if (hint.target === 'item') return `${hint.item.type} ${hint.item.id}`;
  if (hint.target === 'branch') return `a push to branch ${hint.branch} of project ${hint.projectId}`;
  return `commit ${hint.sha.slice(0, 8)} of project ${hint.project}${hint.ref ? ` (${hint.ref})` : ''}`;
}

async function onlineSource(
  api: string,
  token: string,
  ruleFileOf: (path: string) => string,
  rulesOf: (path: string) => CompiledRuleSet,
): Promise<Source> {
  const { readOnlyClient } = await import('./simulate-client.ts');
  const { createSnapshotReader } = await import('../rules/index.ts');
  const { createHintResolver } = await import('../receiver/index.ts');
  const client = readOnlyClient({ baseUrl: api, token, retry: { limit: 1 } });
  // Who the bot is, as the bot learns it at start (start-bot.ts): loop prevention compares with it.
  const me = await client.users.current();
  const reader = createSnapshotReader(client, { bot: { id: me.id, username: me.username } });
  const resolver = createHintResolver(client);
  return {
    name: 'api',
    describe: `read fresh from ${client.http.apiUrl} as @${me.username} (reads only)`,
    bot: { id: me.id, username: me.username },
    client,
    async itemsOf(hint) {
      if (hint.target === 'item') return [hint.item];
      if (hint.target === 'branch') return resolver.mergeRequestsForBranch(hint.projectId, hint.branch);
      return resolver.mergeRequestsForCommit(hint.project, hint.sha, hint.ref);
    },
    async snapshotOf(item, trigger) {
      const project = await reader.projectOf(item.projectId);
      const set = rulesOf(project.path_with_namespace);
      const confirmed = await reader.confirm(item, trigger, set.needs);
      if (!confirmed) return 'the server has no such note on it: the bot would drop this event';
      const snapshot = await reader.read(item, confirmed, set.needs);
      if (!snapshot) return 'the server does not know it (404): the bot would evaluate nothing';
      return { snapshot, set, path: ruleFileOf(project.path_with_namespace), unknown: [] };
    },
  };
}

async function offlineSource(
  event: HookEvent,
  ruleFileOf: (path: string) => string,
  rulesOf: (path: string) => CompiledRuleSet,
): Promise<Source> {
  const { offlineClient } = await import('./simulate-client.ts');
  const { snapshotFromPayload, projectPathOf } = await import('./simulate-payload.ts');
  return {
    name: 'payload',
    describe: 'from the payload alone (offline: give --api and --token to read it fresh)',
    // The bot's user is not known offline: no event counts as the bot's own.
    bot: undefined,
    client: offlineClient(),
    async itemsOf(hint) {
      if (hint.target === 'item') return [hint.item];
      const which = hint.target === 'branch' ? 'whose source branch it is' : 'whose head commit it is';
      return `${describeHint(hint)} concerns the open merge requests ${which}: finding them needs the server (give --api and --token)`;
    },
    async snapshotOf(item, trigger) {
      const path = projectPathOf(event, item);
      const set = rulesOf(path ?? '');
      const read = snapshotFromPayload(event, item, trigger, set.needs, Date.now());
      return { ...read, set, path: path === undefined ? ruleFileOf('') : ruleFileOf(path) };
    },
  };
}

interface Report {
  head: string;
  header: string;
  source: Source;
  outcomes: ItemOutcome[];
  /** What could not be simulated (exit 1). */
  problems: string[];
  /** What the bot would leave alone, and why. */
  remarks: string[];
}

async function print(io: CliIo, options: SimulateOptions, report: Report): Promise<void> {
  const { explainJson, decisionText } = await import('../rules/index.ts');
  if (options.json) {
    const json = {
      event: report.header,
      file: options.event,
      source: report.source.name,
      dryRun: true,
      items: report.outcomes.map((outcome) => ({
        itemKey: outcome.itemKey,
        rules: outcome.rules,
        unknown: outcome.unknown,
        evaluation: explainJson(outcome.evaluation),
        execution: outcome.execution,
      })),
      problems: report.problems,
      remarks: report.remarks,
    };
    io.out(`${JSON.stringify(json, null, 2)}\n`);
    return;
  }
  const lines = [report.head, `state: ${report.source.describe}`];
  for (const outcome of report.outcomes) {
    lines.push('', `== ${outcome.itemKey} (rules: ${outcome.rules})`);
    if (outcome.unknown.length > 0)
      lines.push(
        'not in the payload, so assumed:',
        ...outcome.unknown.map((field) => `  - ${field.field}: ${field.assumed}`),
      );
    lines.push(
      '',
      decisionText({
        itemKey: outcome.itemKey,
        at: outcome.evaluation.at,
        dryRun: true,
        evaluation: outcome.evaluation,
        execution: outcome.execution,
      }),
    );
  }
  if (report.remarks.length > 0) lines.push('', ...report.remarks);
  if (report.problems.length > 0)
    lines.push('', 'not simulated:', ...report.problems.map((problem) => `  - ${problem}`));
  lines.push('', 'simulation: no call was made and nothing was written');
  io.out(`${lines.join('\n')}\n`);
}

export const registerSimulateCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('simulate')
    .description(
      'Show what the bot would do with one hook delivery: matched rules, verdicts, planned calls. Writes nothing.',
    )
    .requiredOption('--event <file>', 'the delivery: a JSON file holding the hook body')
    .option(
      '--kind <header>',
      "its X-Gitlab-Event header, e.g. 'Merge Request Hook' (default: from object_kind)",
    )
    .option('--rules <dir>', 'the rules folder (default: $HOOKBOT_RULES, else rules)')
    .option('--api <url>', 'read the item fresh from this server (its base URL); else from the payload alone')
    .option('--token <token>', "the bot user's token for --api (default: $HOOKBOT_API_TOKEN)")
    .option('--json', 'print the evaluations as JSON')
    .option(
      '--state <file>',
      "a stopped bot's state file, for the merge queue's memory (default: $HOOKBOT_STATE when set)",
    )
    .option(
      '--database [url]',
      "the replicas' PostgreSQL database, read-only, for the merge queue's memory (default: $HOOKBOT_DATABASE_URL, also used when set and no --state is given)",
    )
    .option('--database-schema <name>', "the schema of hookbot's tables (state.database_schema)", 'public')
    .action(async (options: SimulateOptions) => {
      setExitCode(await runSimulateCommand(options, io));
    });
};
