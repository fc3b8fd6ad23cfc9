/**
 * `hookbot start` (what `npm start` runs): the main job. With a server configured it is `serve`;
 * without one it runs on the embedded default: the sandbox (seeded with the demo on first run, state
 * in `data/`) as the server, the bot registered as the demo projects' hook, the rules in `rules/`.
 * Ctrl-C stops both cleanly. The embedded default listens on loopback wherever it runs, in a
 * container too (a dev container, a CI image): only `serve` against a server takes the container's
 * every-interface default, and with it the public-listener guard.
 */
import { randomBytes } from 'node:crypto';
import { configProblems } from './config-problems.ts';
import type { Runtime } from '../start-from-config.ts';
import type { Sandbox } from '../sandbox/index.ts';
import type { CliIo, RegisterCommand } from './command.ts';
import { apiProblem } from './api-problem.ts';
import { serveBanner } from './hook-address.ts';
import { listenProblem } from './listen-problem.ts';
import { onHangup, watchLauncher, watchSignals } from './signals.ts';

interface StartOptions {
  config?: string;
}

export const registerStartCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('start')
    .description('Run the bot: against your server when one is configured, else on the embedded sandbox.')
    .option('--config <file>', 'the configuration file (default: $HOOKBOT_CONFIG)')
    .action(async (options: StartOptions) => {
      setExitCode(await start(options, io));
    });
};

async function start(options: StartOptions, io: CliIo): Promise<number> {
  const { loadConfig } = await import('../config/index.ts');
  const loaded = loadConfig({
    file: options.config ?? process.env.HOOKBOT_CONFIG,
    env: process.env,
    unknownVariables: false,
  });
  if (!loaded.ok) {
    io.err(`hookbot start: ${configProblems(loaded.problems)}\n`);
    return 1;
  }
  const { config } = loaded;
  // The public-listener guard, with where the address came from. On the embedded sandbox the bot
  // listens on loopback unless told otherwise, container or not (config/load-config.ts).
  const { publicListenerProblem } = await import('./public-listener.ts');
  const exposure = publicListenerProblem(loaded);
  if (exposure) {
    io.err(`hookbot start: could not start: ${exposure}\n`);
    return 1;
  }
  const { createLogger, createMetrics } = await import('../ops/index.ts');
  const { startRuntime } = await import('../start-from-config.ts');
  const { quietOnTerminal, startBanner } = await import('./start-banner.ts');
  const quiet =
    loaded.mode === 'sandbox' &&
    quietOnTerminal({
      levelSet: loaded.sources['log.level'] !== undefined,
      isTty: process.stdout.isTTY === true,
    });
  const log = createLogger({ level: quiet ? 'warn' : config.log.level, format: config.log.format });
  for (const warning of loaded.warnings) log.warn({ config: loaded.file }, warning);

  const signals = watchSignals();
  // Under `npm start`, a signal sent to npm's pid ends npm and never reaches the bot: rather than run
  // on orphaned, the bot stops (signals.ts). The banner prints the pid to signal.
  const stopWatchingLauncher = watchLauncher((launcher) => {
    log.warn(
      { launcher: launcher.pid },
      `npm (pid ${launcher.pid}), which started this bot, has ended: stopping. Signals go to the bot's own pid, ${process.pid}: kill -HUP ${process.pid} reloads the rules, kill ${process.pid} stops it`,
    );
    signals.stop('launcher gone');
  });
  let sandbox: Sandbox | undefined;
  let runtime: Runtime | undefined;
  try {
    if (loaded.mode === 'server') {
      runtime = await startRuntime(config, { log, metrics: createMetrics() });
      const { trainsInForce, trainWithoutGitLines } = await import('./train-warning.ts');
      io.out(
        serveBanner({
          warnings: trainWithoutGitLines(await trainsInForce(config.rules.dir), config.git),
          hookUrl: runtime.bot.hookUrl,
          apiUrl: config.api.url ?? '',
          configuredHookUrl: config.hooks.url,
          manageHooks: config.hooks.manage,
          pid: process.pid,
        }),
      );
    } else {
      // The embedded default. The sandbox keeps its state in data/ so the demo survives restarts.
      const { startSandbox, DEMO_GIT_TOKEN, DEMO_TOKENS } = await import('../sandbox/index.ts');
      sandbox = await startSandbox({
        port: config.sandbox.port,
        host: '127.0.0.1',
        dataFile: config.sandbox.data,
        seed: 'demo',
        ...(config.sandbox.ci.script
          ? {
              ci: {
                script: config.sandbox.ci.script,
                durationMs: config.sandbox.ci.duration_ms,
                name: config.sandbox.ci.name,
                parallel: config.sandbox.ci.parallel,
              },
            }
          : {}),
        // Its failed builds and problems, for the person who started it.
        log: (line) => log.warn(line),
      });
      const secret = config.webhook.secret ?? randomBytes(16).toString('hex');
      runtime = await startRuntime(
        config,
        { log, metrics: createMetrics() },
        {
          api: { url: sandbox.url, token: DEMO_TOKENS.hookbot },
          webhookSecret: secret,
          // The merge queue pushes as the bot, with its personal access token.
          git: { username: 'hookbot', password: DEMO_GIT_TOKEN },
        },
      );
      const { createClient } = await import('../api/index.ts');
      const { registerDemoHooks } = await import('./demo-hooks.ts');
      const admin = createClient({ baseUrl: sandbox.url, token: sandbox.adminToken });
      const hooks = await registerDemoHooks(admin, runtime.bot.hookUrl, secret);
      if (hooks.removed > 0)
        log.warn({ removed: hooks.removed }, 'removed extra copies of the bot hook left by earlier starts');
      const { labelsOnOpen, DEMO_ISSUE } = await import('./start-promise.ts');
      io.out(
        startBanner({
          labelsOnOpen: await labelsOnOpen(runtime.rules.forProject(DEMO_ISSUE.project)),
          botUrl: runtime.bot.url,
          hookUrl: runtime.bot.hookUrl,
          sandboxUrl: sandbox.url,
          sandboxApiUrl: sandbox.apiUrl,
          adminToken: sandbox.adminToken,
          demoTokens: DEMO_TOKENS,
          registered: hooks.registered,
          rulesDir: config.rules.dir,
          rulesSet: loaded.sources['rules.dir'] !== undefined,
          statePath: config.state.path,
          sandboxData: config.sandbox.data,
          pid: process.pid,
          cwd: process.cwd(),
          quietLogs: quiet,
          ...(sandbox.ci && config.sandbox.ci.script
            ? { ci: { name: sandbox.ci.name, script: config.sandbox.ci.script } }
            : {}),
        }),
      );
    }
  } catch (error) {
    stopWatchingLauncher();
    signals.release();
    await runtime?.close();
    await sandbox?.close();
    // On the embedded default the sandbox listens first: a listen error before it is up is its port.
    const sandboxPort = loaded.mode === 'sandbox' && sandbox === undefined;
    const problem = sandboxPort
      ? listenProblem(
          error,
          'the embedded sandbox',
          'HOOKBOT_SANDBOX_PORT or sandbox.port in the configuration',
        )
      : (listenProblem(error, 'the bot', 'HOOKBOT_PORT or server.port in the configuration') ??
        apiProblem(error, config.api.url ?? sandbox?.apiUrl ?? ''));
    io.err(
      `hookbot start: could not start: ${problem ?? (error instanceof Error ? error.message : String(error))}\n`,
    );
    return 1;
  }
  const stopHangup = onHangup(() => void runtime.rules.reload());
  const signal = await signals.stopped;
  stopWatchingLauncher();
  log.info({ signal }, 'stopping');
  try {
    await runtime.close();
    await sandbox?.close();
  } finally {
    stopHangup();
    signals.release();
  }
  io.out('hookbot: stopped\n');
  return 0;
}
