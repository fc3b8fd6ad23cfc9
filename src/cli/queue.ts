/**
 * `hookbot queue list|pause|resume|remove|front ...`: an operator's controls of the merge queues
 * (docs/merge-queue.md#steering-the-queue), through a running bot's ops port (POST /queues/...,
 * docs/operations.md#queue-controls). The bot applies them under the locks its queue driver holds,
 * whatever its store (a state file has one writer; PostgreSQL replicas share the control), and wakes
 * the queue. `--bot URL` (default `HOOKBOT_BOT_URL`, else http://127.0.0.1:3000) and the status
 * page's credentials as `hookbot explain --bot` reads them.
 *
 * Exit 0 when the bot did it; 1 when it refused (unknown queue or merge request, not in the queue)
 * or cannot be reached; 2 on a wrong command line.
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import type { CliIo, RegisterCommand } from './command.ts';
import { botAddress } from './bot-address.ts';

const DEFAULT_BOT_URL = 'http://127.0.0.1:3000';

interface QueueOptions {
  bot?: string;
  queue?: string;
  reason?: string;
  by?: string;
  json?: boolean;
}

/** A queue as the bot lists it (GET /queues). */
interface Listing {
  project: string;
  targetBranch: string;
  queue: string;
  paused?: { by: string; reason: string; at: number };
  entries: { position: number; iid: number; front?: { by: string; at: number } }[];
}

function usage(io: CliIo, message: string): number {
  io.err(`hookbot queue: ${message}\n`);
  return 2;
}

function fail(io: CliIo, message: string): number {
  io.err(`hookbot queue: ${message}\n`);
  return 1;
}

/** `!4`, `4` or `#4`: the number people see. */
function iidOf(text: string): number | undefined {
  const match = /^[!#]?(\d{1,9})$/.exec(text.trim());
  const n = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function whoAmI(): string {
  try {
    return userInfo().username || 'operator';
  } catch {
    return 'operator';
  }
}

/** Asks the bot; the answer's JSON, or the exit code of a failure already said. */
async function ask(
  io: CliIo,
  options: QueueOptions,
  route: string,
  body?: object,
): Promise<{ ok: true; body: unknown } | { ok: false; code: number }> {
  const url = options.bot ?? (process.env.HOOKBOT_BOT_URL || DEFAULT_BOT_URL);
  if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url))
    return {
      ok: false,
      code: usage(io, `--bot takes the bot's URL, e.g. ${DEFAULT_BOT_URL} (got "${url}")`),
    };
  const { base, headers, from, problem } = await botAddress(url.replace(/\/+$/, ''));
  let response: Response;
  try {
    response = await fetch(`${base}${route}`, {
      method: body ? 'POST' : 'GET',
      headers: body ? { ...headers, 'content-type': 'application/json' } : headers,
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    const cause =
      error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    return { ok: false, code: fail(io, `no bot answers at ${base} (${cause}). Is it running there?`) };
  }
  const answer: unknown = await response.json().catch(() => undefined);
  const message = (answer as { message?: unknown } | undefined)?.message;
  if (response.status === 401)
    return {
      ok: false,
      code: fail(
        io,
        from !== undefined
          ? `${base} refused the status page's credentials from ${from} (server.status_auth): are they the bot's?`
          : `${base} asks for the status page's credentials (server.status_auth): set HOOKBOT_CONFIG to the bot's configuration file, or HOOKBOT_STATUS_USERNAME and HOOKBOT_STATUS_PASSWORD, or give them in the URL (http://USER:PASSWORD@host:port)${problem !== undefined ? `; ${problem}` : ''}`,
      ),
    };
  if (!response.ok)
    return {
      ok: false,
      code: fail(
        io,
        typeof message === 'string'
          ? message
          : `${base}${route} answered ${response.status}; is ${base} a hookbot of this version?`,
      ),
    };
  return { ok: true, body: answer };
}

function listText(queues: readonly Listing[], now: number): string {
  if (queues.length === 0) return 'no merge queue holds anything, and none is paused\n';
  const lines: string[] = [];
  for (const q of queues) {
    const since = q.paused ? new Date(q.paused.at).toISOString().slice(0, 16).replace('T', ' ') : '';
    lines.push(
      `${q.project} ${q.targetBranch} (${q.queue}): ${q.entries.length} merge request${q.entries.length === 1 ? '' : 's'}${
        q.paused ? `; paused by ${q.paused.by} since ${since} UTC: ${q.paused.reason}` : ''
      }`,
    );
    for (const e of q.entries)
      lines.push(
        `  ${e.position}. !${e.iid}${e.front ? ` (moved to the front by ${e.front.by}, ${Math.max(0, Math.round((now - e.front.at) / 60_000))} min ago)` : ''}`,
      );
  }
  return `${lines.join('\n')}\n`;
}

export async function runQueueCommand(
  action: string,
  args: string[],
  options: QueueOptions,
  io: CliIo,
): Promise<number> {
  const by = options.by ?? whoAmI();
  const queue = options.queue !== undefined ? { queue: options.queue } : {};
  const needs = (count: number, shape: string) =>
    args.length === count
      ? undefined
      : usage(io, `${action} takes ${shape} (got ${args.length} argument${args.length === 1 ? '' : 's'})`);
  const reason = () =>
    options.reason?.trim()
      ? undefined
      : usage(io, `${action} needs --reason TEXT (it is shown in explain and on the merge request)`);
  switch (action) {
    case 'list': {
      const wrong = needs(0, 'no argument');
      if (wrong !== undefined) return wrong;
      const answer = await ask(io, options, '/queues');
      if (!answer.ok) return answer.code;
      const queues = (answer.body as { queues?: Listing[] } | undefined)?.queues ?? [];
      io.out(options.json ? `${JSON.stringify(queues, null, 2)}\n` : listText(queues, Date.now()));
      return 0;
    }
    case 'pause':
    case 'resume': {
      const wrong = needs(2, 'PROJECT TARGET_BRANCH') ?? (action === 'pause' ? reason() : undefined);
      if (wrong !== undefined) return wrong;
      const [project, target] = args as [string, string];
      const body = {
        project,
        target_branch: target,
        ...queue,
        by,
        ...(action === 'pause' ? { reason: options.reason!.trim() } : {}),
      };
      return said(await ask(io, options, `/queues/${action}`, body));
    }
    case 'remove':
    case 'front': {
      const wrong = needs(2, 'PROJECT !NUMBER') ?? (action === 'remove' ? reason() : undefined);
      if (wrong !== undefined) return wrong;
      const [project, number] = args as [string, string];
      const iid = iidOf(number);
      if (iid === undefined)
        return usage(io, `the merge request is its number, e.g. !4 or 4 (got "${number}")`);
      const body = { project, iid, by, ...(action === 'remove' ? { reason: options.reason!.trim() } : {}) };
      return said(await ask(io, options, `/queues/${action}`, body));
    }
    default:
      return usage(io, `unknown action "${action}": list, pause, resume, remove or front`);
  }

  function said(answer: { ok: true; body: unknown } | { ok: false; code: number }): number {
    if (!answer.ok) return answer.code;
    const message = (answer.body as { message?: unknown } | undefined)?.message;
    io.out(`${typeof message === 'string' ? message : 'done'}\n`);
    return 0;
  }
}

export const registerQueueCommand: RegisterCommand = (program: Command, io, setExitCode) => {
  program
    .command('queue')
    .description(
      "Steer a running bot's merge queues: list them, pause a queue (nothing lands), resume it, take a merge request out with a reason, or move one to the front.",
    )
    .argument('<action>', 'list | pause | resume | remove | front')
    .argument('[args...]', 'pause/resume: PROJECT TARGET_BRANCH; remove/front: PROJECT !NUMBER')
    .option('--bot <url>', `the running bot (default: $HOOKBOT_BOT_URL, else ${DEFAULT_BOT_URL})`)
    .option('--queue <name>', 'the queue of the target branch (pause, resume)', undefined)
    .option('--reason <text>', 'why (pause, remove): shown in explain and on the merge request')
    .option('--by <name>', 'who does it, as explain shows it (default: your login name)')
    .option('--json', 'list: print the queues as JSON')
    .action(async (action: string, args: string[], options: QueueOptions) => {
      setExitCode(await runQueueCommand(action, args, options, io));
    });
};
