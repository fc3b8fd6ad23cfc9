/**
 * `hookbot demo`: a scripted scenario against the sandbox, narrated. It starts a fresh sandbox (demo
 * seed) and the bot with the example rules, acts as the people of the demo through the API, and shows
 * after each step what the bot did and why (from its recorded decisions). Exits 0 only if every step
 * happened as expected.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import type { CliIo, RegisterCommand } from './command.ts';
import { demoSteps, type DemoWorld } from './demo-steps.ts';

interface DemoOptions {
  rules: string;
  verbose?: boolean;
  train?: boolean;
  keep?: boolean;
}

export const registerDemoCommand: RegisterCommand = (program, io, setExitCode) => {
  program
    .command('demo')
    .description('Play a scripted scenario against the sandbox and narrate what the bot does and why.')
    .option('--rules <dir>', 'the rules folder to play with', 'rules')
    .option('--verbose', 'show the whole explanation of each decision')
    .option(
      '--train',
      'play a merge train instead: four merge requests, one semantic conflict, the simulated CI',
    )
    .option('--keep', 'with --train: keep the sandbox and the bot running afterwards, until Ctrl+C')
    .action(async (options: DemoOptions, command: Command) => {
      if (options.keep && !options.train) command.error('error: --keep goes with --train');
      if (options.train && (command.getOptionValueSource('rules') === 'cli' || options.verbose))
        command.error(
          'error: --train plays with its own train rule and says every step: --rules and --verbose go without it',
        );
      setExitCode(await demo(options, io));
    });
};

async function demo(options: DemoOptions, io: CliIo): Promise<number> {
  const { booleanVariable, loadConfig } = await import('../config/index.ts');
  // The bot's own logs on stderr, when HOOKBOT_DEMO_LOG is true (the same spellings as every boolean variable).
  const demoLog = booleanVariable(process.env, 'HOOKBOT_DEMO_LOG');
  if (demoLog.set && 'problem' in demoLog) {
    io.err(`hookbot demo: ${demoLog.problem}\n`);
    return 1;
  }
  if (options.train) {
    const { trainDemo } = await import('./demo-train.ts');
    return trainDemo({ keep: options.keep ?? false }, io, 'value' in demoLog && demoLog.value === true);
  }
  const { createLogger, createMetrics } = await import('../ops/index.ts');
  const { startRuntime } = await import('../start-from-config.ts');
  const { startSandbox, DEMO_TOKENS } = await import('../sandbox/index.ts');
  const { createClient } = await import('../api/index.ts');

  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-demo-'));
  const loaded = loadConfig({
    env: {
      HOOKBOT_STATE: path.join(dir, 'hookbot.json'),
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: options.rules,
      HOOKBOT_IN_DOCKER: '0',
    },
  });
  if (!loaded.ok) {
    io.err(`hookbot demo: ${loaded.problems.join('\n')}\n`);
    return 1;
  }
  const config = loaded.config;
  config.pipeline.debounce_ms = 0;
  config.rules.watch = false;
  // The narration is the output; the bot's own logs go to stderr, only when asked for.
  const log =
    demoLog.set && 'value' in demoLog && demoLog.value
      ? createLogger({ level: 'debug', format: 'json', destination: process.stderr })
      : createLogger({ level: 'silent', format: 'json' });
  const sandbox = await startSandbox({ seed: 'demo', hookTimeoutMs: 5_000 });
  const secret = 'demo-hook-secret';
  let runtime: Awaited<ReturnType<typeof startRuntime>> | undefined;
  let failed = 0;
  try {
    runtime = await startRuntime(
      config,
      { log, metrics: createMetrics() },
      {
        api: { url: sandbox.url, token: DEMO_TOKENS.hookbot },
        webhookSecret: secret,
      },
    );
    const admin = createClient({ baseUrl: sandbox.url, token: sandbox.adminToken });
    for (const project of ['acme/web', 'acme/helpdesk']) {
      await admin.hooks.create(project, {
        url: runtime.bot.hookUrl,
        push_events: true,
        issues_events: true,
        merge_requests_events: true,
        note_events: true,
        build_events: true,
        pipeline_events: true,
        token: secret,
      });
    }
    io.out(
      `hookbot demo: sandbox ${sandbox.apiUrl}, bot ${runtime.bot.hookUrl}, rules ${options.rules}/\n\n`,
    );
    const world: DemoWorld = {
      admin,
      alice: createClient({ baseUrl: sandbox.url, token: DEMO_TOKENS.alice }),
      runtime,
      verbose: options.verbose ?? false,
      // The daily sweep, run now (as `hookbot sweep --once` does).
      sweep: async () => void (await runtime!.sweeps.run('rules', { force: true })),
      say: (line) => io.out(`${line}\n`),
    };
    for (const [index, step] of demoSteps.entries()) {
      io.out(`${index + 1}. ${step.title}\n`);
      try {
        await step.run(world);
        io.out(`   ok\n\n`);
      } catch (error) {
        failed++;
        io.out(`   FAILED: ${error instanceof Error ? error.message : String(error)}\n\n`);
      }
    }
  } finally {
    await runtime?.close();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  }
  io.out(
    failed === 0
      ? `All ${demoSteps.length} steps happened as expected.\n`
      : `${failed} of ${demoSteps.length} steps did not happen as expected.\n`,
  );
  return failed === 0 ? 0 : 1;
}
