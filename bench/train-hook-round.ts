/**
 * A merge train moved by hooks only, the sandbox and the bot in separate processes (issue 38: "a
 * hook-driven round adds under 0.1 T at T = 3 s"). This process runs the sandbox (real git over HTTP,
 * the simulated CI of the tests, every build T, runners enough for every build at once) and records
 * what it tells its listeners, with the time; `hookbot serve` runs as its own process
 * (test/reliability/bot-process.ts), its project hook on Merge Request, Note, Push and Build events.
 * Nothing here calls a sweep: the labels' hooks queue the merge requests and wake the merge_queue
 * sweep, the CI's statuses on the cars (Build Hooks on `hookbot/train/` branches) wake it again. Its
 * timer is set to 60 s, a backstop only (a round is one T).
 *
 * The workload is the benchmark's semantic one (bench/train-workload.ts). Figures (`hook_...`): the
 * time from the last label until every merge request is merged or taken out with its comment, in T
 * and against the least a linear train needs (`hook_ideal_rounds`); and the lag of each step of a
 * round, measured on the sandbox's side:
 *
 * - `green_to_land`: from the status that completes the last green car landed by a push (the latest
 *   `success` among the car commits the push brings onto master) to that landing push of master;
 * - `land_to_cars`: from a landing push to the bot's next push of a car (when cars remain to build):
 *   0 when the cars went in the same git push as the landing (the driver's one atomic push);
 * - `fail_to_cars`: from the `failed` status of the front car (its first parent is master as it
 *   stands) to the bot's next push of a car. It includes the wait for the car right behind the front,
 *   which contains it (a failed front car is judged once that car spoke: docs/merge-queue.md "Flaky
 *   CI"), so `judged_to_cars` is also given: from the later of the two statuses to that push.
 *
 * A push is timed when the server took it (the sandbox's `receivedAt`, when its git process ended):
 * the sandbox tells a push's refs one after another, each after its own bookkeeping of the one before
 * (hooks, merge requests refreshed), so the refs of one git push are told tens of milliseconds apart
 * although they landed together. A status is timed when it was posted (the first listener).
 *
 * `hook_round_lag_*` is over every step of the three; p50 and max, in ms and in T. `hook_round_added_t`
 * is what hooks add to a round that lands and builds on (the p50s of its two steps, summed, in T): the
 * issue's target is under 0.1 T at T = 3 s.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createClient } from '../src/api/client.ts';
import { addGroup, addProject, addUser } from '../src/sandbox/factories.ts';
import { startSandbox } from '../src/sandbox/server.ts';
import { INITIAL_FILES } from '../test/helpers/queue-world.ts';
import { startSimulatedCi } from '../test/helpers/simulated-ci.ts';
import { startBotProcess, type BotProcess } from '../test/reliability/bot-process.ts';
import { makeSecret, writeConfig } from '../test/reliability/harness.ts';
import { writeRules } from '../test/reliability/world.ts';
import { p50max } from './train-measure.ts';
import { idealOutcome, idealTrain, trainWorkload } from './train-workload.ts';

type Figures = Record<string, number | string>;

const NULL_SHA = '0000000000000000000000000000000000000000';
const TRAIN_REFS = 'refs/heads/hookbot/train/';
const REMOVED = 'Removed from the default merge queue for `master`:';
/** The merge_queue sweep's timer: a backstop, far longer than a round. */
const BACKSTOP_S = 60;
const run = promisify(execFile);

interface Push {
  /** Its place among the project's pushes, in the order the server took them. */
  seq: number;
  at: number;
  ref: string;
  before: string;
  after: string;
  byBot: boolean;
}

interface Status {
  at: number;
  sha: string;
  ref: string;
  state: string;
}

export async function hookRound(options: {
  t: number;
  mergeRequests: number;
  depth: number;
  rules: (queue: Record<string, number>, t: number) => string;
}): Promise<Figures> {
  const { t, depth } = options;
  const workload = trainWorkload(options.mergeRequests);
  const ideal = idealOutcome(workload, INITIAL_FILES);
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-bench-hook-round-'));
  // Made at random for this run (test/reliability/harness.ts), as the reliability scenarios' are.
  const botPassword = makeSecret('bot-git-password');
  const ciPassword = makeSecret('ci-git-password');
  const sb = await startSandbox({ adminToken: makeSecret('admin-token'), hookTimeoutMs: 10_000 });
  const { db } = sb.ctx;
  const bot = addUser(db, {
    username: 'hookbot',
    private_token: makeSecret('bot-token'),
    password: botPassword,
  });
  const ciUser = addUser(db, {
    username: 'round-ci',
    private_token: makeSecret('ci-token'),
    password: ciPassword,
  });
  const group = addGroup(db, {
    name: 'acme',
    owner_id: 1,
    members: [
      { user_id: bot.id, access_level: 40 },
      { user_id: ciUser.id, access_level: 30 },
    ],
  });
  const project = await addProject(sb.ctx, {
    name: 'web',
    namespace_id: group.id,
    creator_id: 1,
    initialFiles: { ...INITIAL_FILES, ...workload.base },
  });
  const admin = createClient({ baseUrl: sb.url, token: sb.adminToken, retry: { limit: 0 } });
  await admin.branches.protect(project.id, 'master');
  const ci = startSimulatedCi(sb, {
    token: ciUser.private_token,
    git: { username: ciUser.username, password: ciPassword },
    buildMs: t,
    parallel: 64,
  });
  const repo = path.join(sb.ctx.reposDir!, `${project.id}.git`);
  const git = async (args: string[]) => (await run('git', ['-C', repo, ...args])).stdout.trim();
  let botProcess: BotProcess | undefined;
  try {
    const mrs: { id: number; position: number }[] = [];
    for (const change of workload.changes) {
      await admin.branches.create(project.id, { branch_name: change.branch, ref: 'master' });
      for (const [file, content] of Object.entries(change.files)) {
        const update = Object.hasOwn(INITIAL_FILES, file) || Object.hasOwn(workload.base, file);
        const response = await fetch(`${sb.apiUrl}/projects/${project.id}/repository/files`, {
          method: update ? 'PUT' : 'POST',
          headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
          body: JSON.stringify({
            file_path: file,
            branch_name: change.branch,
            content,
            commit_message: `${change.kind}: ${file}`,
          }),
        });
        if (!response.ok) throw new Error(`could not commit ${file} on ${change.branch}: ${response.status}`);
      }
      const mr = await admin.mergeRequests.create(project.id, {
        source_branch: change.branch,
        target_branch: 'master',
        title: `${change.position}: ${change.kind}`,
      });
      mrs.push({ id: mr.id, position: change.position });
    }
    await ci.idle();

    const secret = makeSecret('hook-secret');
    const debounce = process.env.BENCH_TRAIN_HOOK_DEBOUNCE_MS;
    const config = writeConfig(
      dir,
      'config.yml',
      [
        ...(debounce ? ['pipeline:', `  debounce_ms: ${Number(debounce)}`] : []),
        'rules:',
        '  watch: false',
        'git:',
        `  cache_dir: ${path.join(dir, 'git-cache')}`,
        'scheduler:',
        '  sweeps:',
        `    merge_queue: { every: ${BACKSTOP_S}s }`,
        '    reconcile: { enabled: false }',
        '    rules: { enabled: false }',
        '    merge_watch: { enabled: false }',
        '    hook_check: { enabled: false }',
        '',
      ].join('\n'),
    );
    botProcess = await startBotProcess(
      {
        env: {
          HOOKBOT_API_URL: sb.url,
          HOOKBOT_API_TOKEN: bot.private_token!,
          HOOKBOT_GIT_PASSWORD: botPassword,
          HOOKBOT_WEBHOOK_SECRET: secret,
          HOOKBOT_PORT: '0',
          HOOKBOT_RULES: writeRules(dir, { 'default.yml': options.rules({ depth }, t) }),
          HOOKBOT_STATE: path.join(dir, 'state', 'hookbot.json'),
          HOOKBOT_LOG_LEVEL: 'warn',
          HOOKBOT_CONFIG: config,
          ...(process.env.HOOKBOT_TRAIN_TRACE
            ? { HOOKBOT_TRAIN_TRACE: process.env.HOOKBOT_TRAIN_TRACE }
            : {}),
        },
      },
      'merge-train bench: hook round',
    );
    await admin.hooks.create(project.id, {
      url: botProcess.hookUrl,
      token: secret,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });

    const masterAtStart = await git(['rev-parse', 'refs/heads/master']);
    const pushes: Push[] = [];
    const statuses: Status[] = [];
    // A push is timed when the server took it (`receivedAt`: a push's refs are told one after the
    // other, each after the sandbox's own bookkeeping of the one before), a status when posted.
    sb.ctx.on.push.unshift((event) => {
      if (event.project.id !== project.id) return;
      pushes.push({
        seq: pushes.length,
        at: event.receivedAt ?? performance.now(),
        ref: event.ref,
        before: event.before,
        after: event.after,
        byBot: event.user.id === bot.id,
      });
    });
    sb.ctx.on.status.unshift((event) => {
      if (event.project.id !== project.id || !event.ref?.startsWith('hookbot/train/')) return;
      const latest = db.data.statuses.findLast(
        (st) => st.project_id === project.id && st.sha === event.sha && st.ref === event.ref,
      );
      if (latest?.status === 'success' || latest?.status === 'failed')
        statuses.push({ at: performance.now(), sha: event.sha, ref: event.ref, state: latest.status });
    });
    const runsBefore = ci.runs;

    for (const mr of mrs) await admin.mergeRequests.update(project.id, mr.id, { labels: ['automerge'] });
    const started = performance.now();
    const deadline = started + 60 * t + 120_000;
    const outcome = () => {
      let landed = 0;
      let removed = 0;
      for (const mr of mrs) {
        if (db.data.mergeRequests.find((m) => m.id === mr.id)?.state === 'merged') landed++;
        else if (
          db.data.notes.some(
            (n) =>
              n.noteable_type === 'MergeRequest' &&
              n.noteable_id === mr.id &&
              n.author_id === bot.id &&
              n.body.startsWith(REMOVED),
          )
        )
          removed++;
      }
      return { landed, removed };
    };
    for (;;) {
      const { landed, removed } = outcome();
      if (landed + removed === mrs.length) break;
      if (!botProcess.alive()) throw new Error(`hookbot serve exited:\n${botProcess.output().slice(-2000)}`);
      if (performance.now() > deadline)
        throw new Error(`the train did not finish in ${Math.round((deadline - started) / 1000)} s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const ms = performance.now() - started;
    const ciRuns = ci.runs - runsBefore;
    const { landed } = outcome();
    let mergeQueueRuns = '?';
    try {
      const metrics = await (await fetch(`${botProcess.baseUrl}/metrics`)).text();
      const counts = [
        ...metrics.matchAll(/^hookbot_sweep_runs_total\{[^}]*sweep="merge_queue"[^}]*\} (\d+)/gm),
      ];
      mergeQueueRuns = String(counts.reduce((sum, m) => sum + Number(m[1]), 0));
    } catch {
      // The figure is a check, not the measure: left `?` when it cannot be read.
    }

    // The steps' lags, from what the sandbox recorded.
    const successAt = new Map<string, number>();
    for (const st of statuses)
      if (st.state === 'success' && !successAt.has(st.sha)) successAt.set(st.sha, st.at);
    const carPushes = pushes.filter((p) => p.byBot && p.ref.startsWith(TRAIN_REFS) && p.after !== NULL_SHA);
    const landings = pushes.filter((p) => p.byBot && p.ref === 'refs/heads/master');
    // The next push of a car after a landing, in the server's order (a car pushed with the landing, in
    // the same git push, was taken at the same time), or after a time (a failed status).
    const carAfterLanding = (landing: Push, next?: Push) =>
      carPushes.find((p) => p.seq > landing.seq && (!next || p.seq < next.seq));
    const nextCarPush = (after: number) => carPushes.find((p) => p.at > after);
    const greenToLand: number[] = [];
    const landToCars: number[] = [];
    const failToCars: number[] = [];
    for (const [i, landing] of landings.entries()) {
      const brought = (await git(['rev-list', '--first-parent', `${landing.before}..${landing.after}`]))
        .split('\n')
        .filter(Boolean);
      const greens = brought.map((sha) => successAt.get(sha));
      if (greens.length > 0 && greens.every((at) => at !== undefined))
        greenToLand.push(landing.at - Math.max(...(greens as number[])));
      const next = carAfterLanding(landing, landings[i + 1]);
      if (next) landToCars.push(next.at - landing.at);
    }
    const masterAt = (at: number) => landings.findLast((p) => p.at < at)?.after ?? masterAtStart;
    const parentOf = new Map<string, string>();
    for (const st of statuses)
      if (!parentOf.has(st.sha)) parentOf.set(st.sha, await git(['rev-parse', `${st.sha}^1`]));
    const judgedToCars: number[] = [];
    for (const st of statuses) {
      if (st.state !== 'failed') continue;
      if (parentOf.get(st.sha) !== masterAt(st.at)) continue;
      const next = nextCarPush(st.at);
      if (next) failToCars.push(next.at - st.at);
      // Judged once the car right behind it (built on its commit) spoke, when there is one.
      const behind = statuses.find((other) => parentOf.get(other.sha) === st.sha);
      const judged = Math.max(st.at, behind?.at ?? st.at);
      const after = nextCarPush(judged);
      if (after) judgedToCars.push(after.at - judged);
    }

    const figures: Figures = {
      hook_merge_requests: mrs.length,
      hook_depth: depth,
      hook_time_t: Number((ms / t).toFixed(2)),
      hook_ms: Math.round(ms),
      hook_ideal_rounds: idealTrain(ideal.failed, mrs.length, depth).rounds,
      hook_landed: landed,
      hook_left: mrs.length - landed,
      hook_ci_runs: ciRuns,
      hook_backstop_s: BACKSTOP_S,
      hook_debounce_ms: debounce ?? 'default',
      hook_merge_queue_runs: mergeQueueRuns,
      hook_landing_pushes: landings.length,
    };
    figures.hook_rounds_ratio = Number((ms / t / Number(figures.hook_ideal_rounds)).toFixed(2));
    const put = (name: string, values: number[]) => {
      const { p50, max } = p50max(values);
      figures[`hook_${name}_steps`] = values.length;
      figures[`hook_${name}_p50_ms`] = Math.round(p50);
      figures[`hook_${name}_max_ms`] = Math.round(max);
      figures[`hook_${name}_p50_t`] = Number((p50 / t).toFixed(3));
      figures[`hook_${name}_max_t`] = Number((max / t).toFixed(3));
    };
    put('green_to_land', greenToLand);
    put('land_to_cars', landToCars);
    put('fail_to_cars', failToCars);
    put('judged_to_cars', judgedToCars);
    put('round_lag', [...greenToLand, ...landToCars, ...failToCars]);
    // What hooks add to a round that lands and goes on: its two steps, each at its p50.
    figures.hook_round_added_t = Number(
      (Number(figures.hook_green_to_land_p50_t) + Number(figures.hook_land_to_cars_p50_t)).toFixed(3),
    );
    return figures;
  } finally {
    await botProcess?.stop();
    await ci.stop();
    await sb.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
