/**
 * `hookbot demo --train`: a merge train in about a minute, offline. A private sandbox (demo seed) with
 * its simulated CI, a project `acme/shop` made for the run, the bot started with a train rule of its
 * own (depth 3) and the git credentials of the demo's bot user, its hook on the project; then the
 * scenario of demo-train-story.ts, narrated step by step. Everything lives in one temporary folder
 * (state, rules, git cache, the CI's builds), removed at the end; with `--keep`, the sandbox and the
 * bot stay up until Ctrl+C so that the queue's page can be looked at, and are removed then.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client, Project } from '../api/index.ts';
import type { CliIo } from './command.ts';
import {
  checkOutcome,
  INITIAL_FILES,
  namesCheck,
  openChanges,
  queueChanges,
  queuePage,
  TRAIN_DEPTH,
  TRAIN_LABEL,
  TRAIN_RULES,
  TRAIN_STATUS,
  watchTrain,
  type TrainWorld,
} from './demo-train-story.ts';

export interface TrainDemoOptions {
  keep?: boolean;
}

/** The whole story must end within this; it takes well under a minute on a loaded 2-core machine. */
const DEADLINE_MS = 150_000;
/** A simulated build's duration: long enough to see cars built at once, short enough for a demo. */
const BUILD_MS = 1_500;

/** The run's project `acme/shop`: master with the first files, and the bot's hook (build events on: cars' statuses move the train). */
async function makeShop(admin: Client, hookUrl: string): Promise<Project> {
  const acme = (await admin.projects.get('acme/web')).namespace.id;
  const project = await admin.projects.create({ name: 'shop', namespace_id: acme });
  for (const [file, content] of INITIAL_FILES)
    await admin.files.create(project.id, {
      file_path: file,
      branch_name: 'master',
      content,
      commit_message: `Add ${file}`,
    });
  await admin.hooks.create(project.id, {
    url: hookUrl,
    push_events: true,
    merge_requests_events: true,
    note_events: true,
    build_events: true,
    pipeline_events: true,
    token: 'demo-hook-secret',
  });
  return project;
}

export async function trainDemo(options: TrainDemoOptions, io: CliIo, logToStderr: boolean): Promise<number> {
  const { loadConfig } = await import('../config/index.ts');
  const { createLogger, createMetrics } = await import('../ops/index.ts');
  const { startRuntime } = await import('../start-from-config.ts');
  const { startSandbox, DEMO_TOKENS, DEMO_GIT_TOKEN } = await import('../sandbox/index.ts');
  const { createClient } = await import('../api/index.ts');
  const { watchSignals } = await import('./signals.ts');

  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-demo-train-'));
  mkdirSync(path.join(dir, 'rules'));
  writeFileSync(path.join(dir, 'rules', 'default.yml'), TRAIN_RULES);
  mkdirSync(path.join(dir, 'ci'));
  const loaded = loadConfig({
    env: {
      HOOKBOT_STATE: path.join(dir, 'hookbot.json'),
      HOOKBOT_PORT: '0',
      HOOKBOT_RULES: path.join(dir, 'rules'),
      HOOKBOT_IN_DOCKER: '0',
    },
  });
  if (!loaded.ok) {
    rmSync(dir, { recursive: true, force: true });
    io.err(`hookbot demo: ${loaded.problems.join('\n')}\n`);
    return 1;
  }
  const config = loaded.config;
  config.pipeline.debounce_ms = 0;
  config.rules.watch = false;
  // The train's git work in the run's folder, not in data/ of the folder the demo was started in.
  config.git.cache_dir = path.join(dir, 'git-cache');
  const log = logToStderr
    ? createLogger({ level: 'debug', format: 'json', destination: process.stderr })
    : createLogger({ level: 'silent', format: 'json' });
  // Listening before anything starts: a Ctrl+C during the story ends its wait, and the folder is removed.
  const signals = watchSignals();
  let stopped = false;
  void signals.stopped.then(() => (stopped = true));
  const sandbox = await startSandbox({
    seed: 'demo',
    hookTimeoutMs: 5_000,
    ci: {
      check: namesCheck,
      durationMs: BUILD_MS,
      name: TRAIN_STATUS,
      parallel: 4,
      workDir: path.join(dir, 'ci'),
    },
  });
  let runtime: Awaited<ReturnType<typeof startRuntime>> | undefined;
  let failed = 0;
  let steps = 0;
  try {
    runtime = await startRuntime(
      config,
      { log, metrics: createMetrics() },
      {
        api: { url: sandbox.url, token: DEMO_TOKENS.hookbot },
        webhookSecret: 'demo-hook-secret',
        // The train pushes its cars and lands them as the bot, with its personal access token.
        git: { username: 'hookbot', password: DEMO_GIT_TOKEN },
      },
    );
    const admin = createClient({ baseUrl: sandbox.url, token: sandbox.adminToken });
    const project = await makeShop(admin, runtime.bot.hookUrl);
    io.out(
      [
        `hookbot demo --train: sandbox ${sandbox.apiUrl}, bot ${runtime.bot.url}, project ${project.path_with_namespace}`,
        `  the rule: merge requests labelled ${TRAIN_LABEL} join a merge train of depth ${TRAIN_DEPTH} (${TRAIN_DEPTH} cars tested at once); each car must pass ${TRAIN_STATUS}`,
        `  the simulated CI: ${TRAIN_STATUS} passes when every "calls: NAME" line has a "def NAME" line in some file (${BUILD_MS / 1000} s a build)`,
        '',
        '',
      ].join('\n'),
    );
    const world: TrainWorld = {
      admin,
      alice: createClient({ baseUrl: sandbox.url, token: DEMO_TOKENS.alice }),
      runtime,
      project: { id: project.id, path: project.path_with_namespace },
      verdict: (sha) => sandbox.ci!.verdict(project.id, sha),
      say: (line) => io.out(`${line}\n`),
      deadline: Date.now() + DEADLINE_MS,
      stopped: () => stopped,
    };
    await sandbox.ci?.idle();
    const masterBefore = (await admin.branches.get(project.id, 'master')).commit.id;
    let mrs: Awaited<ReturnType<typeof openChanges>> = [];
    const story: [string, () => Promise<void>][] = [
      [
        'Four merge requests, each passing ci/test on its own',
        async () => void (mrs = await openChanges(world)),
      ],
      ['They join the merge train', () => queueChanges(world, mrs)],
      ['The train tests them together and lands what passes', () => watchTrain(world, mrs, masterBefore)],
      ['The conflict caught, the others landed, master never broken', () => checkOutcome(world, mrs)],
    ];
    for (const [index, [title, run]] of story.entries()) {
      steps++;
      io.out(`${index + 1}. ${title}\n`);
      try {
        await run();
        io.out('   ok\n\n');
      } catch (error) {
        failed++;
        io.out(`   FAILED: ${error instanceof Error ? error.message : String(error)}\n\n`);
        // Each step needs the one before.
        break;
      }
    }
    if (stopped) {
      io.out('Stopped before the end: everything it made is removed.\n');
      return 1;
    }
    const page = await queuePage(runtime.bot.url);
    io.out(`The queue's page: ${page}\n`);
    io.out(
      failed === 0
        ? `All ${story.length} steps happened as expected.\n`
        : `${failed} of ${steps} steps did not happen as expected.\n`,
    );
    if (options.keep) {
      io.out(
        [
          `Kept running (--keep): open ${page}`,
          `  the sandbox's API: ${sandbox.apiUrl} (alice's token ${DEMO_TOKENS.alice}; docs/merge-queue.md#trying-the-queue-offline makes more merge requests)`,
          `  the bot's hook: ${runtime.bot.hookUrl}`,
          'Press Ctrl+C to stop; the sandbox, the bot and their temporary folder are removed then.',
          '',
        ].join('\n'),
      );
      await signals.stopped;
    } else
      io.out('(hookbot demo --train --keep keeps the sandbox and the bot running to look at the page.)\n');
  } finally {
    await runtime?.close();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
    signals.release();
  }
  return failed === 0 ? 0 : 1;
}
