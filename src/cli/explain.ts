/**
 * `hookbot explain PROJECT (issue|mr) NUMBER [--bot [URL] | --state FILE | --database [URL]] [--decision ID] [--json]`:
 * why the bot did what it did to an item: each action the decisions it kept sent, withdrew or
 * parked, with the evaluation that planned it, then its latest evaluation (every rule, every
 * condition's value and verdict, the plan and what became of each call) and the evaluations kept
 * (rules/item/explain-answer.ts); `--decision ID` shows one of them. PROJECT is `namespace/project` or the project's id; NUMBER is the
 * number people see (`4` or `#4`, the iid) or the item's global id, the iid first (when it is
 * both, the answer says which other item the global id is: find-decision.ts).
 *
 * - With `--bot`, it asks a running bot (`GET /explain/:project/:kind/:number`); `--bot` alone
 *   means `HOOKBOT_BOT_URL`, else http://127.0.0.1:3000. A bot with `server.status_auth` wants
 *   its credentials: in the URL (`http://user:password@host:port`), else read as the bot reads
 *   them: HOOKBOT_STATUS_USERNAME and HOOKBOT_STATUS_PASSWORD, or the configuration file
 *   HOOKBOT_CONFIG names (its password_file too).
 * - With `--database` (or with none of the three and `HOOKBOT_DATABASE_URL` set), it reads the
 *   replicas' PostgreSQL database: one read-only transaction (postgres/read-decisions.ts), safe
 *   while they run, and the whole fleet's decisions whichever replica made them.
 * - Otherwise it reads the state file (`--state`, else `HOOKBOT_STATE`, else data/hookbot.json):
 *   opened, read, closed without compaction. The store has one writer: while a bot holds the file,
 *   a second process opening it could cut the journal under it, so explain refuses and says to use
 *   `--bot` (on Linux it sees the holder in /proc; elsewhere it cannot tell).
 *
 * Both answer from recorded decisions only. Exit 0 with the decision; 1 when there is none or it
 * cannot be read; 2 on a wrong command line.
 */
import { existsSync } from 'node:fs';
import type { DecisionRecord, PausedRule, QueueControl, QueueEntry } from '../state/index.ts';
import type { CliIo, RegisterCommand } from './command.ts';
import { holdersOf } from './state-holders.ts';
import { botAddress } from './bot-address.ts';
import {
  explainAnswer,
  explainKind,
  type ExplainQuery,
  type ExplainSelector,
  findDecision,
  itemName,
  itemNumber,
  projectRefProblem,
} from '../rules/index.ts';

interface ExplainOptions {
  /** `true` when given without a URL. */
  bot?: string | boolean;
  state?: string;
  /** `true` when given without a URL. */
  database?: string | boolean;
  databaseSchema?: string;
  /** One kept decision by its id. */
  decision?: string;
  json?: boolean;
}

/**
 * What explain prints of an answer (explain-answer.ts `ExplainBody`, or from a bot of an earlier
 * version the decision alone, without `explanation`), checked at the boundary.
 */
interface DecisionLike {
  text: string;
  explanation?: unknown;
  lookup?: { by?: unknown; note?: unknown };
  [key: string]: unknown;
}

const DEFAULT_BOT_URL = 'http://127.0.0.1:3000';
const DEFAULT_STATE = 'data/hookbot.json';
const isDecision = (value: unknown): value is DecisionLike =>
  value !== null && typeof value === 'object' && typeof (value as { text?: unknown }).text === 'string';

/** The decision on stdout; a note on how the number was read (iid or global id) on stderr. */
function print(
  io: CliIo,
  decision: DecisionLike,
  json: boolean | undefined,
  note: string | undefined,
): number {
  if (note) io.err(`hookbot explain: ${note}\n`);
  const text = typeof decision.explanation === 'string' ? decision.explanation : decision.text;
  io.out(json ? `${JSON.stringify(decision, null, 2)}\n` : `${text}\n`);
  return 0;
}

function fail(io: CliIo, message: string): number {
  io.err(`hookbot explain: ${message}\n`);
  return 1;
}

export async function runExplainCommand(
  args: { project: string; kind: string; id: string },
  options: ExplainOptions,
  io: CliIo,
): Promise<number> {
  const usage = (message: string) => {
    io.err(`hookbot explain: ${message}\n`);
    return 2;
  };
  const problem = projectRefProblem(args.project);
  if (problem) return usage(`PROJECT must be namespace/project (e.g. acme/web) or a project id: ${problem}`);
  const kind = explainKind(args.kind);
  if (kind === undefined) return usage(`the kind must be issue or mr (got "${args.kind}")`);
  const number = itemNumber(args.id);
  if (number === undefined) return usage(`NUMBER must be a positive number, e.g. 4 or #4 (got "${args.id}")`);
  const sources = [options.bot, options.state, options.database].filter((given) => given !== undefined);
  if (sources.length > 1)
    return usage(
      "give one of --bot (ask a running bot), --state (read its state file) or --database (read the replicas' database)",
    );
  const target: ExplainQuery = { project: args.project, kind, number };
  if (options.decision !== undefined && !/^[0-9a-f]{12}$/.test(options.decision))
    return usage(
      `--decision takes a decision id: 12 hex digits, as explain and the status page show them (got "${options.decision}")`,
    );

  if (options.bot !== undefined) {
    const url = options.bot === true ? process.env.HOOKBOT_BOT_URL || DEFAULT_BOT_URL : String(options.bot);
    if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url))
      return usage(`--bot takes the bot's URL, e.g. ${DEFAULT_BOT_URL} (got "${url}"); write --bot=URL`);
    return fromBot(url.replace(/\/+$/, ''), target, options, io);
  }
  const databaseUrl =
    options.database === true || (options.database === undefined && options.state === undefined)
      ? process.env.HOOKBOT_DATABASE_URL || undefined
      : options.database || undefined;
  if (options.database !== undefined && databaseUrl === undefined)
    return usage('--database needs the URL: --database=postgres://... or HOOKBOT_DATABASE_URL');
  if (databaseUrl !== undefined)
    return fromDatabase(databaseUrl, options.databaseSchema ?? 'public', target, options, io);
  return fromState(options.state ?? (process.env.HOOKBOT_STATE || DEFAULT_STATE), target, options, io);
}

async function fromDatabase(
  url: string,
  schema: string,
  target: ExplainQuery,
  options: ExplainOptions,
  io: CliIo,
): Promise<number> {
  const { readDecisions, describeDatabase, StateError } = await import('../state/index.ts');
  let read;
  try {
    // The item's kept decisions in the same read-only transaction as the latest ones.
    read = await readDecisions(url, schema, (latest) => {
      const found = findDecision(latest, target);
      return found.found ? found.record.itemKey : undefined;
    });
  } catch (error) {
    if (error instanceof StateError) return fail(io, error.message);
    throw error;
  }
  return lookUp(
    read.latest,
    read.kept,
    `the state database ${describeDatabase(url)} (schema ${schema})`,
    target,
    options,
    io,
  );
}

async function fromBot(
  url: string,
  target: ExplainQuery,
  options: ExplainOptions,
  io: CliIo,
): Promise<number> {
  const { base, headers, from, problem } = await botAddress(url);
  const route = `/explain/${encodeURIComponent(target.project)}/${target.kind === 'issue' ? 'issue' : 'mr'}/${target.number}${options.decision === undefined ? '' : `?decision=${options.decision}`}`;
  let response: Response;
  try {
    response = await fetch(`${base}${route}`, { headers, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    const cause =
      error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    return fail(
      io,
      `no bot answers at ${base} (${cause}). Is it running there? Without --bot, explain reads the state file.`,
    );
  }
  const body: unknown = await response.json().catch(() => undefined);
  const message = (body as { message?: unknown } | undefined)?.message;
  if (response.status === 401)
    return fail(
      io,
      from !== undefined
        ? `${base} refused the status page's credentials from ${from} (server.status_auth): are they the bot's?`
        : `${base} asks for the status page's credentials (server.status_auth): set HOOKBOT_CONFIG to the bot's configuration file, or HOOKBOT_STATUS_USERNAME and HOOKBOT_STATUS_PASSWORD, or give them in the URL (http://USER:PASSWORD@host:port)${problem !== undefined ? `; ${problem}` : ''}`,
    );
  if (response.status === 404 && typeof message === 'string' && message.startsWith('no decision recorded'))
    return fail(io, `${message} yet (the bot records one each time it evaluates the item)`);
  if (response.status === 404 && typeof message === 'string' && message.startsWith('no decision '))
    return fail(io, message);
  if (!response.ok || !isDecision(body))
    return fail(
      io,
      `${base}${route} answered ${response.status}${typeof message === 'string' ? `: ${message}` : ''}; is ${base} a hookbot?`,
    );
  const note = typeof body.lookup?.note === 'string' ? body.lookup.note : undefined;
  if (!options.json) delete body.lookup;
  return print(io, body, options.json, note);
}

async function fromState(
  file: string,
  target: ExplainQuery,
  options: ExplainOptions,
  io: CliIo,
): Promise<number> {
  const { createFileStore, resolveFileStoreOptions, StateError } = await import('../state/index.ts');
  const journal = resolveFileStoreOptions({ path: file }).journalPath;
  const holders = await holdersOf(journal);
  if (holders.length > 0)
    return fail(
      io,
      `${file} is in use by process ${holders.join(', ')} (a running bot): the state file has one writer, and opening it from a second process could damage it. Ask the bot instead: hookbot explain ${target.project} ${target.kind === 'issue' ? 'issue' : 'mr'} ${target.number} --bot [URL]`,
    );
  // A bot that has not compacted yet has only its journal; opening would create what is missing.
  if (!existsSync(file) && !existsSync(journal))
    return fail(
      io,
      `no state file at ${file}: pass the bot's with --state FILE, or ask a running bot with --bot [URL]`,
    );

  // Bounds well above any configured ones: opening must not drop decisions the bot keeps.
  const store = createFileStore({
    path: file,
    decisionItems: 1_000_000,
    recentDecisions: 1_000_000,
    decisionHistory: 1_000_000,
    actingDecisions: 1_000_000,
    decisionItemBytes: Number.MAX_SAFE_INTEGER,
    decisionBytes: Number.MAX_SAFE_INTEGER,
  });
  try {
    await store.open();
  } catch (error) {
    if (error instanceof StateError) return fail(io, error.message);
    throw error;
  }
  try {
    const latest = store.latestDecisions();
    const found = findDecision(latest, target);
    const kept = found.found ? await store.keptDecisions(found.record.itemKey) : [];
    return lookUp(
      latest,
      kept,
      file,
      target,
      options,
      io,
      store.queued(),
      store.pausedRules(),
      store.queueControls(),
    );
  } finally {
    // Without compaction: reading must leave the files as the bot left them.
    await store.close({ compact: false });
  }
}

/** `kept`: the found item's kept decisions, newest first. */
function lookUp(
  records: DecisionRecord[],
  kept: readonly DecisionRecord[],
  where: string,
  target: ExplainQuery,
  options: ExplainOptions,
  io: CliIo,
  queue?: readonly QueueEntry[],
  paused?: readonly PausedRule[],
  controls?: readonly QueueControl[],
): number {
  const answer = findDecision(
    records,
    target,
    queue && {
      entries: queue,
      now: Date.now(),
      ...(paused ? { paused } : {}),
      ...(controls ? { controls } : {}),
    },
  );
  if (!answer.found) return fail(io, `${answer.message} in ${where}`);
  if (!isDecision(answer.record.decision))
    return fail(io, `the decision recorded for ${itemName(target)} cannot be read (another version?)`);
  const selector: ExplainSelector = options.decision === undefined ? {} : { decision: options.decision };
  const result = explainAnswer(answer, kept, selector);
  if (!result.found) return fail(io, `${result.message} in ${where}`);
  // As before: the file and the database answer without the lookup (the bot's JSON has it).
  const { lookup: _lookup, ...body } = result.body;
  return print(io, { ...body, text: String(body.text) }, options.json, result.note);
}

export const registerExplainCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('explain')
    .description(
      'Show why the bot acted on an issue or merge request: its actions with the decisions that planned them, and its latest evaluation.',
    )
    .argument('<project>', 'namespace/project, or the project id')
    .argument('<kind>', 'issue or mr')
    .argument('<number>', 'the number people see (4 or #4), or the global id (as in API paths)')
    .option('--bot [url]', `ask a running bot (default: $HOOKBOT_BOT_URL, else ${DEFAULT_BOT_URL})`)
    .option('--state <file>', `read the state file (default: $HOOKBOT_STATE, else ${DEFAULT_STATE})`)
    .option(
      '--database [url]',
      "read the replicas' PostgreSQL database, read-only (default: $HOOKBOT_DATABASE_URL, which is also used when no --bot or --state is given)",
    )
    .option('--database-schema <name>', "the schema of hookbot's tables (state.database_schema)", 'public')
    .option(
      '--decision <id>',
      'show one of the decisions kept for the item, by its id (explain and the status page show them)',
    )
    .option('--json', 'print the whole answer as JSON')
    .action(async (project: string, kind: string, number: string, options: ExplainOptions) => {
      setExitCode(await runExplainCommand({ project, kind, id: number }, options, io));
    });
};
