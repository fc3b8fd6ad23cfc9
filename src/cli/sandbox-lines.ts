/**
 * The command lines that run `sweep` and `plan` against the embedded sandbox of a running
 * `hookbot start` (`npm start`), from another terminal in the same folder: the start banner prints
 * them, and `sweep` and `plan` without a server print them too when such a sandbox answers on this
 * machine (or point to the banner when none does).
 *
 * The sweep gets a state file of its own beside the bot's: the running bot holds its own (one
 * writer: `sweep --once` would be refused by its lock), and a dry run against the sandbox needs no
 * history of the bot's. `plan` is read-only and opens no state.
 */
import path from 'node:path';

export interface SandboxLinesInput {
  /** The sandbox's base URL (`api.url`: without `/api/v3`). */
  apiUrl: string;
  /** The bot user's private token on the sandbox. */
  token: string;
  /** The running bot's state file (absolute): the sweep's goes beside it, under another name. */
  botState: string;
  /** The rules folder, when it is not the default (`rules/` of the folder): the commands read it too. */
  rulesDir?: string | undefined;
  /** The folder the lines are run from: paths inside it are written relative to it. */
  cwd: string;
}

/** `a b` -> `'a b'`: a word the shell reads back as it is. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

function shown(file: string, cwd: string): string {
  const relative = path.relative(cwd, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

/** The sweep's state file: `sweep.json` beside the bot's (`sweep-once.json` if the bot's is named so). */
function sweepStateBeside(botState: string): string {
  const dir = path.dirname(botState);
  const name = path.basename(botState) === 'sweep.json' ? 'sweep-once.json' : 'sweep.json';
  return path.join(dir, name);
}

export function sandboxCommandLines(input: SandboxLinesInput): { sweep: string; plan: string } {
  const env = [
    `HOOKBOT_API_URL=${shellWord(input.apiUrl)}`,
    `HOOKBOT_API_TOKEN=${shellWord(input.token)}`,
    ...(input.rulesDir !== undefined ? [`HOOKBOT_RULES=${shellWord(shown(input.rulesDir, input.cwd))}`] : []),
  ].join(' ');
  const state = shellWord(shown(sweepStateBeside(input.botState), input.cwd));
  return {
    sweep: `${env} HOOKBOT_STATE=${state} npx hookbot sweep --once --dry-run`,
    plan: `${env} npx hookbot plan`,
  };
}

/**
 * The embedded sandbox of a `hookbot start` on this machine, if one answers at `port` on loopback
 * as the demo's bot user (its token is the demo's, the same on every sandbox seeded with the demo):
 * its base URL. Asked once, with a short timeout: nothing that answers otherwise, or late, counts.
 */
async function localSandbox(port: number, token: string): Promise<string | undefined> {
  if (!(port > 0)) return undefined;
  const url = `http://127.0.0.1:${port}`;
  try {
    const response = await fetch(`${url}/api/v3/user`, {
      headers: { 'private-token': token },
      signal: AbortSignal.timeout(1_000),
    });
    if (!response.ok) return undefined;
    const user = (await response.json()) as { username?: unknown };
    return user.username === 'hookbot' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What `sweep` and `plan` say without a server: the lines to paste when `npm start`'s sandbox
 * answers on this machine, else where to find them.
 */
export async function noServerMessage(
  command: 'sweep' | 'plan',
  config: { sandbox: { port: number }; state: { path: string }; rules: { dir: string } },
  rulesSet: boolean,
): Promise<string> {
  const why = command === 'sweep' ? 'a sweep talks to a server' : 'the plan reads the open items on a server';
  const head = `no server configured: set api.url and api.token (HOOKBOT_API_URL, HOOKBOT_API_TOKEN): ${why}.`;
  const { DEMO_TOKENS } = await import('../sandbox/index.ts');
  const found = await localSandbox(config.sandbox.port, DEMO_TOKENS.hookbot);
  if (found === undefined)
    return `${head}\nTo try it on the embedded sandbox, keep \`npm start\` running in another terminal in this folder and paste the \`hookbot ${command}\` line its banner prints.`;
  const lines = sandboxCommandLines({
    apiUrl: found,
    token: DEMO_TOKENS.hookbot,
    botState: config.state.path,
    rulesDir: rulesSet ? config.rules.dir : undefined,
    cwd: process.cwd(),
  });
  return `${head}\nThe embedded sandbox of \`npm start\` answers at ${found}: to ${command === 'sweep' ? 'sweep it (a dry run, with a state file of its own: the running bot holds its own)' : 'plan against it'}, paste\n  ${lines[command]}`;
}
