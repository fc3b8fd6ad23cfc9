/**
 * `hookbot serve`: the bot against a real server, configured by `--config FILE` (or `HOOKBOT_CONFIG`)
 * and the environment (which wins). A bad configuration fails at start with every problem listed.
 * SIGHUP reloads the rules; SIGTERM or SIGINT stops accepting, finishes or persists in-flight work and
 * exits 0, within `server.shutdown_timeout_ms` (past it the rest is abandoned, logged, and left in the
 * inbox: start-from-config.ts).
 */
import type { CliIo, RegisterCommand } from './command.ts';
import { configProblems } from './config-problems.ts';
import { apiProblem } from './api-problem.ts';
import { serveBanner } from './hook-address.ts';
import { listenProblem } from './listen-problem.ts';
import { onHangup, watchSignals } from './signals.ts';

interface ServeOptions {
  config?: string;
}

export const registerServeCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('serve')
    .description('Run the bot against the server your configuration names.')
    .option('--config <file>', 'the configuration file (default: $HOOKBOT_CONFIG)')
    .action(async (options: ServeOptions) => {
      setExitCode(await serve(options, io));
    });
};

async function serve(options: ServeOptions, io: CliIo): Promise<number> {
  const { loadConfig } = await import('../config/index.ts');
  const loaded = loadConfig({
    file: options.config ?? process.env.HOOKBOT_CONFIG,
    env: process.env,
    unknownVariables: false,
  });
  if (!loaded.ok) {
    io.err(`hookbot serve: ${configProblems(loaded.problems)}\n`);
    return 1;
  }
  if (loaded.mode === 'sandbox') {
    io.err(
      'hookbot serve: no server configured (api.url or HOOKBOT_API_URL). Set one, or run `npm start` to use the embedded sandbox.\n',
    );
    return 1;
  }
  // The public-listener guard, with where the address came from (a variable, the file, the container).
  const { publicListenerProblem } = await import('./public-listener.ts');
  const exposure = publicListenerProblem(loaded);
  if (exposure) {
    io.err(`hookbot serve: could not start: ${exposure}\n`);
    return 1;
  }
  const { createLogger, createMetrics } = await import('../ops/index.ts');
  const { startRuntime } = await import('../start-from-config.ts');
  const { config } = loaded;
  const log = createLogger({ level: config.log.level, format: config.log.format });
  for (const warning of loaded.warnings) log.warn({ config: loaded.file }, warning);
  if (config.webhook.allow_open && !config.webhook.secret)
    log.warn({}, 'running open: deliveries are accepted without a secret');

  const signals = watchSignals();
  let runtime;
  try {
    runtime = await startRuntime(config, { log, metrics: createMetrics() });
  } catch (error) {
    signals.release();
    const problem =
      listenProblem(error, 'the bot', 'HOOKBOT_PORT or server.port in the configuration') ??
      apiProblem(error, config.api.url ?? '');
    io.err(
      `hookbot serve: could not start: ${problem ?? (error instanceof Error ? error.message : String(error))}\n`,
    );
    return 1;
  }
  const stopHangup = onHangup(() => void runtime.rules.reload());
  const { trainsInForce, trainWithoutGitLines } = await import('./train-warning.ts');
  const warnings = trainWithoutGitLines(await trainsInForce(config.rules.dir), config.git);
  io.out(
    serveBanner({
      warnings,
      hookUrl: runtime.bot.hookUrl,
      apiUrl: config.api.url ?? '',
      configuredHookUrl: config.hooks.url,
      manageHooks: config.hooks.manage,
      pid: process.pid,
    }),
  );
  const signal = await signals.stopped;
  log.info({ signal }, 'stopping');
  try {
    await runtime.close();
  } finally {
    stopHangup();
    signals.release();
  }
  return 0;
}
