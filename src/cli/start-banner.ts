/**
 * What `npm start` prints on the embedded sandbox: where everything is, the pid that takes signals,
 * then the next step, a copy-paste that opens an issue as a demo user and reads its labels back once
 * the bot acted, and the lines that run `sweep` and `plan` against this sandbox from another
 * terminal (sandbox-lines.ts). Kept short, and last: on a terminal the logs are quieter at start
 * (see quietOnTerminal) so that it stays on the screen.
 */
import { sandboxCommandLines } from './sandbox-lines.ts';
import { andList, DEMO_ISSUE } from './start-promise.ts';

export interface StartBannerInput {
  botUrl: string;
  hookUrl: string;
  /** The sandbox's base URL (what `api.url` would be), and its API (`/api/v3`). */
  sandboxUrl: string;
  sandboxApiUrl: string;
  adminToken: string;
  demoTokens: Record<string, string>;
  registered: string[];
  rulesDir: string;
  /** Whether the rules folder was set (a variable, the file): the pasted commands then name it. */
  rulesSet: boolean;
  statePath: string;
  sandboxData: string;
  /** The process that takes signals: HUP reloads the rules, INT and TERM stop. */
  pid: number;
  /** The folder hookbot was started in: paths inside it are shown relative to it. */
  cwd: string;
  /** Why the logs show less than info, if they do. */
  quietLogs: boolean;
  /** The simulated CI, when sandbox.ci.script turns it on: its status name and script. */
  ci?: { name: string; script: string };
  /** The labels the rules in force add to the issue the next step opens (start-promise.ts). */
  labelsOnOpen: readonly string[];
}

export function startBanner(input: StartBannerInput): string {
  const issues = `${input.sandboxApiUrl}/projects/acme%2Fweb/issues`;
  const alice = `-H 'PRIVATE-TOKEN: ${input.demoTokens.alice ?? 'alice-demo-token'}'`;
  const field = (name: string) => `node -pe 'JSON.parse(require("fs").readFileSync(0)).${name}'`;
  const commands = sandboxCommandLines({
    apiUrl: input.sandboxUrl,
    token: input.demoTokens.hookbot ?? 'hookbot-demo-token',
    botState: input.statePath,
    rulesDir: input.rulesSet ? input.rulesDir : undefined,
    cwd: input.cwd,
  });
  return [
    'hookbot is running on the embedded sandbox (no server configured; config.example.yml shows how to use yours).',
    `  bot:         ${input.botUrl} (hooks at ${input.hookUrl})`,
    `  status page: ${input.botUrl}/status`,
    `  sandbox:     ${input.sandboxApiUrl}`,
    `  admin token: ${input.adminToken} (user root)`,
    `  demo users:  ${Object.entries(input.demoTokens)
      .map(([user, token]) => `${user} (${token})`)
      .join(', ')}`,
    `  hook registered on: ${input.registered.join(', ') || 'no project'}`,
    `  rules:       ${input.rulesDir}/ (reloaded on change; kill -HUP ${input.pid} reloads too)`,
    `  state:       ${input.statePath}, sandbox data ${input.sandboxData}`,
    `  pid:         ${input.pid} (the bot's process: kill -HUP ${input.pid} reloads the rules, kill ${input.pid} stops it; npm start's own pid is npm's, not this one)`,
    ...(input.ci
      ? [
          `  CI:          every pushed commit gets ${input.ci.name} from \`${input.ci.script}\` (simulated, user sandbox-ci)`,
        ]
      : []),
    ...(input.quietLogs
      ? [
          '  logs:        warnings and errors only on this terminal (HOOKBOT_LOG_LEVEL=info shows every sweep)',
        ]
      : []),
    '',
    input.labelsOnOpen.length > 0
      ? `Next: open an issue as alice, then read its labels back (the rules in force add ${andList(input.labelsOnOpen)}):`
      : `Next: open an issue as alice, then read its labels back (the rules in force in ${input.rulesDir}/ add none to it; explain says what they did):`,
    `  id=$(curl -s ${alice} -X POST '${issues}' -d 'title=${DEMO_ISSUE.title}' | ${field('id')})`,
    `  curl -s ${alice} "${issues}/$id" | ${field('labels')}`,
    `  curl -s ${input.botUrl}/explain/acme%2Fweb/issue/$id   # why it acted`,
    '',
    'Sweep or plan against this sandbox from another terminal in this folder (the sweep keeps a state file of its own):',
    `  ${commands.sweep}`,
    `  ${commands.plan}`,
    'Or run `npx hookbot demo` for a narrated tour. Press Ctrl+C to stop.',
    '',
  ].join('\n');
}

/**
 * On a terminal, the embedded default logs warnings and errors only, unless a level was asked for
 * (log.level, HOOKBOT_LOG_LEVEL): at info the scheduler alone writes a dozen pretty lines at start
 * and more each minute, which pushed the banner off the screen within seconds. The status page
 * shows what the bot did; a log collector (not a terminal) still gets info.
 */
export function quietOnTerminal(options: { levelSet: boolean; isTty: boolean }): boolean {
  return options.isTty && !options.levelSet;
}
