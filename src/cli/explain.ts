/**
 * `hookbot explain PROJECT (issue|mr) ID [--bot [URL]] [--state FILE] [--json]`: the latest decision
 * the bot recorded for an item (every rule, every condition's value and verdict, the plan and what
 * became of each call). PROJECT is `namespace/project` or the project's id; ID is the item's global
 * id, the one API paths and `GET /explain/...` use (not the `#3` people see).
 *
 * - With `--bot`, it asks a running bot (`GET /explain/:project/:kind/:id`); `--bot` alone means
 *   `HOOKBOT_BOT_URL`, else http://127.0.0.1:3000.
 * - Without, it reads the state file (`--state`, else `HOOKBOT_STATE`, else data/hookbot.json):
 *   opened, read, closed without compaction. The store has one writer: while a bot holds the file,
 *   a second process opening it could cut the journal under it, so explain refuses and says to use
 *   `--bot` (on Linux it sees the holder in /proc; elsewhere it cannot tell).
 *
 * Exit 0 with the decision; 1 when there is none or it cannot be read; 2 on a wrong command line.
 */
import { existsSync } from 'node:fs';
import { readdir, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { StateStore } from '../state/store.ts';
import type { CliIo, RegisterCommand } from './main.ts';

interface ExplainOptions {
  /** `true` when given without a URL. */
  bot?: string | boolean;
  state?: string;
  json?: boolean;
}

type Kind = 'issue' | 'merge_request';

interface Target {
  project: string;
  kind: Kind;
  id: number;
}

/** What explain prints of a decision (process-item.ts `Decision`), checked at the boundary. */
interface DecisionLike {
  text: string;
  [key: string]: unknown;
}

const DEFAULT_BOT_URL = 'http://127.0.0.1:3000';
const DEFAULT_STATE = 'data/hookbot.json';
const PROJECT = /^(\d+|[^/\s]+\/[^/\s]+)$/;
const KINDS: Readonly<Record<string, Kind>> = {
  issue: 'issue',
  mr: 'merge_request',
  merge_request: 'merge_request',
};

const isDecision = (value: unknown): value is DecisionLike =>
  value !== null && typeof value === 'object' && typeof (value as { text?: unknown }).text === 'string';

const itemName = ({ project, kind, id }: Target): string =>
  `${kind === 'issue' ? 'issue' : 'merge request'} ${id} of ${/^\d+$/.test(project) ? `project ${project}` : project}`;

function print(io: CliIo, decision: DecisionLike, json: boolean | undefined): number {
  io.out(json ? `${JSON.stringify(decision, null, 2)}\n` : `${decision.text}\n`);
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
  if (!PROJECT.test(args.project))
    return usage(`PROJECT must be namespace/project (e.g. acme/web) or a project id (got "${args.project}")`);
  const kind = Object.hasOwn(KINDS, args.kind) ? KINDS[args.kind] : undefined;
  if (kind === undefined) return usage(`the kind must be issue or mr (got "${args.kind}")`);
  if (!/^[1-9]\d*$/.test(args.id)) return usage(`ID must be a positive number (got "${args.id}")`);
  if (options.bot !== undefined && options.state !== undefined)
    return usage('give --bot (ask a running bot) or --state (read its state file), not both');
  const target: Target = { project: args.project, kind, id: Number(args.id) };

  if (options.bot !== undefined) {
    const url = options.bot === true ? process.env.HOOKBOT_BOT_URL || DEFAULT_BOT_URL : String(options.bot);
    if (!/^https?:\/\/[^/]/.test(url))
      return usage(`--bot takes the bot's URL, e.g. ${DEFAULT_BOT_URL} (got "${url}"); write --bot=URL`);
    return fromBot(url.replace(/\/+$/, ''), target, options, io);
  }
  return fromState(options.state ?? (process.env.HOOKBOT_STATE || DEFAULT_STATE), target, options, io);
}

async function fromBot(url: string, target: Target, options: ExplainOptions, io: CliIo): Promise<number> {
  const route = `/explain/${encodeURIComponent(target.project)}/${target.kind === 'issue' ? 'issue' : 'mr'}/${target.id}`;
  let response: Response;
  try {
    response = await fetch(`${url}${route}`, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    const cause =
      error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    return fail(
      io,
      `no bot answers at ${url} (${cause}). Is it running there? Without --bot, explain reads the state file.`,
    );
  }
  const body: unknown = await response.json().catch(() => undefined);
  const message = (body as { message?: unknown } | undefined)?.message;
  if (response.status === 404 && message === 'no decision recorded for this item yet')
    return fail(
      io,
      `no decision recorded for ${itemName(target)} yet (the bot records one each time it evaluates the item)`,
    );
  if (response.status === 404 && message === 'no such project')
    return fail(io, `the bot's server does not know project ${target.project}`);
  if (!response.ok || !isDecision(body))
    return fail(
      io,
      `${url}${route} answered ${response.status}${typeof message === 'string' ? `: ${message}` : ''}; is ${url} a hookbot?`,
    );
  return print(io, body, options.json);
}

async function fromState(file: string, target: Target, options: ExplainOptions, io: CliIo): Promise<number> {
  const { createFileStore, resolveFileStoreOptions, StateError } = await import('../state/index.ts');
  const journal = resolveFileStoreOptions({ path: file }).journalPath;
  const holders = await holdersOf(journal);
  if (holders.length > 0)
    return fail(
      io,
      `${file} is in use by process ${holders.join(', ')} (a running bot): the state file has one writer, and opening it from a second process could damage it. Ask the bot instead: hookbot explain ${target.project} ${target.kind === 'issue' ? 'issue' : 'mr'} ${target.id} --bot [URL]`,
    );
  // A bot that has not compacted yet has only its journal; opening would create what is missing.
  if (!existsSync(file) && !existsSync(journal))
    return fail(
      io,
      `no state file at ${file}: pass the bot's with --state FILE, or ask a running bot with --bot [URL]`,
    );

  // Bounds well above any configured ones: opening must not drop decisions the bot keeps.
  const store = createFileStore({ path: file, decisionItems: 1_000_000, recentDecisions: 1_000_000 });
  try {
    await store.open();
  } catch (error) {
    if (error instanceof StateError) return fail(io, error.message);
    throw error;
  }
  try {
    return lookUp(store, file, target, options, io);
  } finally {
    // Without compaction: reading must leave the files as the bot left them.
    await store.close({ compact: false });
  }
}

interface RecordedItem {
  itemKey: string;
  project: string | undefined;
  iid: number | undefined;
}

/** What a stored decision says about its item (decisions are opaque to the store). */
function recordedItem(itemKey: string, decision: unknown): RecordedItem {
  const item = (decision as { evaluation?: { item?: { project?: unknown; iid?: unknown } } } | null)
    ?.evaluation?.item;
  return {
    itemKey,
    project: typeof item?.project === 'string' ? item.project : undefined,
    iid: typeof item?.iid === 'number' ? item.iid : undefined,
  };
}

function lookUp(store: StateStore, file: string, target: Target, options: ExplainOptions, io: CliIo): number {
  // Decisions are kept by `<kind>:<project id>:<id>`; a path is matched through the decisions the
  // store remembers (the recent ones, and the merge watch's items).
  const known: RecordedItem[] = [
    ...store
      .recentDecisions(Number.MAX_SAFE_INTEGER)
      .map((record) => recordedItem(record.itemKey, record.decision)),
    ...store.watched().map((entry) => ({ itemKey: entry.itemKey, project: entry.project, iid: undefined })),
  ];
  const projectIdOf = (item: RecordedItem) => item.itemKey.split(':')[1];
  let projectId: string | undefined = /^\d+$/.test(target.project) ? target.project : undefined;
  if (projectId === undefined) {
    const wanted = target.project.toLowerCase();
    projectId = known.filter((item) => item.project?.toLowerCase() === wanted).map(projectIdOf)[0];
    if (projectId === undefined)
      return fail(
        io,
        `${file} holds no recent decision for ${target.project}, so its project id is unknown here: give the id instead of the path, or ask a running bot with --bot [URL]`,
      );
  }
  const record = store.latestDecision(`${target.kind}:${projectId}:${target.id}`);
  if (record && isDecision(record.decision)) return print(io, record.decision, options.json);
  if (record)
    return fail(io, `the decision recorded for ${itemName(target)} cannot be read (another version?)`);
  // The id people see is the iid (#3, !7): say which item that is, if a decision names it.
  const byIid = known.find(
    (item) => item.iid === target.id && item.itemKey.startsWith(`${target.kind}:${projectId}:`),
  );
  const hint = byIid
    ? ` (ID is the global id, as in API paths; ${target.kind === 'issue' ? '#' : '!'}${target.id} is id ${byIid.itemKey.split(':')[2]})`
    : '';
  return fail(io, `no decision recorded for ${itemName(target)} in ${file}${hint}`);
}

/**
 * The processes that hold the journal open (the bot keeps its active segment open for appends;
 * a segment being sealed keeps its fd under its new name `<journal>.<n>`). Linux only: elsewhere,
 * or for other users' processes, nothing is found.
 */
async function holdersOf(journal: string): Promise<number[]> {
  let resolved: string;
  try {
    resolved = path.join(await realpath(path.dirname(path.resolve(journal))), path.basename(journal));
  } catch {
    return [];
  }
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const holds = async (pid: string): Promise<boolean> => {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      return false;
    }
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (target === resolved || target.startsWith(`${resolved}.`)) return true;
    }
    return false;
  };
  const found = await Promise.all(pids.map(async (pid) => ((await holds(pid)) ? Number(pid) : undefined)));
  return found.filter((pid) => pid !== undefined);
}

export const registerExplainCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('explain')
    .description("Show the bot's latest decision for an issue or merge request, and why.")
    .argument('<project>', 'namespace/project, or the project id')
    .argument('<kind>', 'issue or mr')
    .argument('<id>', 'the global id of the issue or merge request (as in API paths)')
    .option('--bot [url]', `ask a running bot (default: $HOOKBOT_BOT_URL, else ${DEFAULT_BOT_URL})`)
    .option('--state <file>', `read the state file (default: $HOOKBOT_STATE, else ${DEFAULT_STATE})`)
    .option('--json', 'print the whole decision as JSON')
    .action(async (project: string, kind: string, id: string, options: ExplainOptions) => {
      setExitCode(await runExplainCommand({ project, kind, id }, options, io));
    });
};
