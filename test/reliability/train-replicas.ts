/**
 * Train replicas (issue 32): a merge train (`depth: 3`) driven by three `hookbot serve` replicas on
 * one PostgreSQL schema, while the replica driving it is killed with SIGKILL and restarted, again and
 * again, until the queue is empty. The world is train-world.ts: the sandbox with real git over HTTP,
 * the simulated CI building every pushed commit (300 ms to 1 s), the workload's merge requests (one
 * broken alone, one pair in a semantic conflict), and a load balancer in front of the replicas that
 * the project's hook points at (a delivery a dead replica cannot take goes to the next one). The
 * merge_queue sweep runs as in production: woken by hooks (the label's Merge Request Hook, the CI's
 * Build Hooks on train branches) and by its timer every 2 s, so a killed driver's work is taken up by
 * another replica once its leases (3 s) run out.
 *
 * The kills, in turn: right after a car was pushed to its train branch, while a driver run holds the
 * train (its item lease `item:merge-train:...` in the database), shortly after a car's build failed
 * (in the run that removes a merge request, its comment going through the outbox), right after a
 * landing push of master. The victim is the replica holding the train's lease then (else the
 * merge_queue sweep's). Between two kills the train must have pushed something again.
 *
 * Checked at the end, from the sandbox (its data, its git repository, the pushes it told listeners of):
 * every merge request merged or removed with exactly one removal comment, as an ideal queue would do
 * with the workload; each merged once (one `accepted` event), its head merged into master's
 * first-parent line once; master only ever moved by fast-forward, to commits pushed to a train branch
 * first; no car branch pushed with two different commits for one car (below); every commit of master's
 * first-parent line passes the CI's check; no train branch left. From the state database: nothing
 * queued, nothing parked. And no replica exited on its own; SIGTERM at the end exits 0.
 *
 * One car, one commit: a car of one merge request is its train branch (named by the merge request),
 * the commit below it and the merge request's head; its commit's parents are exactly those two. So
 * for every push to a `hookbot/train/` branch, (branch, first parent, second parent) names the car
 * pushed; each must have been pushed with one sha only (a rebuild after a crash makes the same commit),
 * but for the queue's retries of a car whose build failed (a new commit, so the CI builds it again).
 */
import path from 'node:path';
import pg from 'pg';
import { startBotProcess, sleep, waitFor, type BotProcess } from './bot-process.ts';
import { freePort, makeSecret, writeConfig } from './harness.ts';
import { Expectations, notableLines, type ScenarioResult } from './report.ts';
import type { Sizes } from './sizes.ts';
import { createTrainWorld, isDeletion, isTrainRef, type TrainWorld } from './train-world.ts';
import { writeRules } from './world.ts';

const DATABASE_URL = process.env.HOOKBOT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DEPTH = 3;
/** The queue's `retries` of a failed car, by default (the rule below sets none). */
const RETRIES = 1;
const REMOVED = 'Removed from the default merge queue for `master`:';
const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 1m, depth: ${DEPTH} }
`;
type Moment = 'after a car push' | 'while driving' | 'after a failed build' | 'after a landing push';
const MOMENTS: Moment[] = [
  'after a car push',
  'while driving',
  'after a failed build',
  'after a landing push',
];

interface QueueRow {
  mrId: number;
  left?: unknown;
}

export async function trainReplicasScenario(sizes: Sizes): Promise<ScenarioResult> {
  const started = performance.now();
  const expect = new Expectations();
  const schema = `reliability_train_${process.pid}_${Date.now().toString(36)}`;
  const db = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 5_000 });
  try {
    await db.connect();
  } catch (error) {
    return {
      name: 'train-replicas',
      seconds: 0,
      figures: {},
      failures: [
        `PostgreSQL at ${DATABASE_URL} cannot be reached (${error instanceof Error ? error.message : String(error)}): start it, or set HOOKBOT_TEST_DATABASE_URL`,
      ],
      totals: {},
    };
  }
  const table = (name: string) => `"${schema}".${name}`;
  const secret = makeSecret('hook-secret');
  let world: TrainWorld | undefined;
  const replicas: (BotProcess | undefined)[] = [undefined, undefined, undefined];
  const stopKills = new AbortController();
  try {
    world = await createTrainWorld({ mergeRequests: sizes.trainMergeRequests });
    const w = world;
    const rulesDir = writeRules(w.dir, { 'default.yml': RULES });
    const ports = await Promise.all(replicas.map(() => freePort()));
    const configs = replicas.map((_, i) =>
      writeConfig(
        w.dir,
        `config-${i}.yml`,
        [
          'pipeline:',
          '  debounce_ms: 50',
          'rules:',
          '  watch: false',
          'git:',
          `  cache_dir: ${path.join(w.dir, `git-cache-${i}`)}`,
          'scheduler:',
          '  sweeps:',
          '    retries: { every: 1s }',
          '    merge_queue: { every: 2s }',
          '    reconcile: { enabled: false }',
          '    rules: { enabled: false }',
          '    merge_watch: { enabled: false }',
          '    hook_check: { enabled: false }',
          'state:',
          '  lease_ms: 3000',
          `  database_schema: ${schema}`,
          '',
        ].join('\n'),
      ),
    );
    const generations = [1, 1, 1];
    const replicaId = (i: number) => `train-replica-${i}-${generations[i]}`;
    const restartMs: number[] = [];
    const start = async (i: number) => {
      const t0 = performance.now();
      replicas[i] = await startBotProcess(
        {
          env: {
            HOOKBOT_API_URL: w.sandbox.url,
            HOOKBOT_API_TOKEN: w.botToken,
            HOOKBOT_GIT_PASSWORD: w.botPassword,
            HOOKBOT_WEBHOOK_SECRET: secret,
            HOOKBOT_PORT: String(ports[i]),
            HOOKBOT_RULES: rulesDir,
            HOOKBOT_STATE: path.join(w.dir, `unused-state-${i}`, 'hookbot.json'),
            HOOKBOT_LOG_LEVEL: 'info',
            HOOKBOT_CONFIG: configs[i]!,
            HOOKBOT_DATABASE_URL: DATABASE_URL,
            HOOKBOT_REPLICA_ID: replicaId(i),
          },
        },
        `train-replicas: replica ${i} #${generations[i]}`,
      );
      restartMs.push(performance.now() - t0);
    };
    for (let i = 0; i < replicas.length; i++) await start(i);
    const balancer = await w.startBalancer(ports);
    await w.admin.hooks.create(w.projectId, {
      url: balancer.url,
      token: secret,
      merge_requests_events: true,
      note_events: true,
      push_events: true,
      build_events: true,
    });

    let crashes = 0;
    const unexpected: string[] = [];
    /** Replicas being killed and restarted by the kills: not an exit of their own. */
    const restarting = new Set<number>();
    const checkAlive = async () => {
      for (let i = 0; i < replicas.length; i++) {
        if (restarting.has(i) || replicas[i]!.alive()) continue;
        crashes++;
        unexpected.push(
          `replica ${i} #${generations[i]} exited on its own:`,
          ...notableLines(replicas[i]!.output()),
        );
        generations[i]!++;
        await start(i);
      }
    };
    const queueRows = async (): Promise<QueueRow[]> =>
      (await db.query<{ entry: string }>(`SELECT entry FROM ${table('hookbot_queue')}`)).rows.map(
        (r) => JSON.parse(r.entry) as QueueRow,
      );
    const count = async (sql: string) => Number((await db.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
    /** The replica holding the train's item lease (a driver run in progress), else the sweep's lease. */
    const driver = async (trainOnly: boolean): Promise<{ index: number; driving: boolean } | undefined> => {
      const rows = await db.query<{ name: string; holder: string }>(
        `SELECT name, holder FROM ${table('hookbot_leases')} WHERE until > clock_timestamp()
           AND (name LIKE 'item:merge-train:%' OR name = 'sweep:merge_queue')`,
      );
      const live = (holder: string) => replicas.findIndex((r, i) => r?.alive() && replicaId(i) === holder);
      for (const row of rows.rows) {
        const index = live(row.holder);
        if (row.name.startsWith('item:merge-train:') && index >= 0) return { index, driving: true };
      }
      if (trainOnly) return undefined;
      for (const row of rows.rows) {
        const index = live(row.holder);
        if (index >= 0) return { index, driving: false };
      }
      return undefined;
    };

    // The kills, in turn at the moments of MOMENTS, from the first car push until the queue is empty.
    const kills: string[] = [];
    const killed: Record<Moment, number> = {
      'after a car push': 0,
      'while driving': 0,
      'after a failed build': 0,
      'after a landing push': 0,
    };
    let killsDriving = 0;
    const killing = (async () => {
      const stop = stopKills.signal;
      const firstCar = await w.nextPush(0, (p) => p.byBot && isTrainRef(p.ref), stop);
      if (!firstCar) return;
      for (let k = 0; k < sizes.trainKills && !stop.aborted; k++) {
        const moment = MOMENTS[k % MOMENTS.length]!;
        const within = AbortSignal.any([stop, AbortSignal.timeout(10_000)]);
        const mark = w.pushes.length;
        let victim: { index: number; driving: boolean } | undefined;
        const untilDriving = async (ms: number) => {
          const until = Date.now() + ms;
          for (;;) {
            const found = await driver(true);
            if (found !== undefined || within.aborted || Date.now() > until) return found;
            await sleep(5);
          }
        };
        if (moment === 'while driving') victim = await untilDriving(10_000);
        else if (moment === 'after a failed build') {
          // The run that reads the failure removes a merge request (its comment goes through the
          // outbox) or splits the train: the kill falls somewhere in that run.
          if (await w.nextFailedBuild(w.failedBuilds.length, within)) {
            const found = await untilDriving(3_000);
            if (found !== undefined) {
              await sleep(Math.random() * 150);
              victim = (await driver(true)) ?? { index: found.index, driving: false };
            }
          }
        } else {
          const wanted = (ref: string) =>
            moment === 'after a car push' ? isTrainRef(ref) : ref === 'refs/heads/master';
          const push = await w.nextPush(mark, (p) => p.byBot && !isDeletion(p) && wanted(p.ref), within);
          if (push) victim = await driver(false);
        }
        if (victim === undefined || stop.aborted) continue;
        const at = w.pushes.length;
        restarting.add(victim.index);
        await replicas[victim.index]!.kill9();
        killed[moment]++;
        if (victim.driving) killsDriving++;
        kills.push(
          `${moment}: replica ${victim.index} #${generations[victim.index]}${victim.driving ? ' (driving)' : ''} at push ${at}`,
        );
        generations[victim.index]!++;
        await start(victim.index).finally(() => restarting.delete(victim.index));
        // The train must move again (a push by the bot) before the next kill.
        await w.nextPush(at, (p) => p.byBot && !isDeletion(p), stop);
      }
    })().catch((error: unknown) => {
      expect.true('the kills went as planned', false, String(error));
    });

    // Labelled one after the other, each once it is queued (its place in the queue is its position).
    const removalNotes = (mrId: number) =>
      w.sandbox.ctx.db.data.notes.filter(
        (n) =>
          n.author_id === w.botUserId &&
          n.noteable_type === 'MergeRequest' &&
          n.noteable_id === mrId &&
          !n.system,
      );
    const stateOf = (mrId: number) => w.sandbox.ctx.db.data.mergeRequests.find((m) => m.id === mrId)?.state;
    for (const mr of w.mergeRequests) {
      await w.admin.mergeRequests.update(w.projectId, mr.id, { labels: ['automerge'] });
      await waitFor(
        `!${mr.iid} queued`,
        async () => {
          await checkAlive();
          if (stateOf(mr.id) === 'merged' || removalNotes(mr.id).length > 0) return true;
          return (await queueRows()).some((row) => row.mrId === mr.id) ? true : undefined;
        },
        30_000,
        25,
      );
    }

    // The queue empties: every merge request merged or removed with its comment (the sandbox), no train
    // branch left (the sandbox), nothing queued and no action still to do (the state database).
    const trainBranches = async () =>
      (await w.sandbox.ctx.git.branches(w.projectId)).filter((b) => b.name.startsWith('hookbot/train/'));
    let finished = true;
    await waitFor(
      'every merge request merged or removed, no train branch, nothing queued, the outbox empty',
      async () => {
        await checkAlive();
        if (!w.mergeRequests.every((mr) => stateOf(mr.id) === 'merged' || removalNotes(mr.id).length > 0))
          return undefined;
        if ((await trainBranches()).length > 0) return undefined;
        if ((await queueRows()).some((row) => row.left === undefined)) return undefined;
        return (await count(`SELECT count(*) AS n FROM ${table('hookbot_outbox')}`)) === 0 ? true : undefined;
      },
      sizes.settleTimeoutMs,
      100,
    ).catch((error: unknown) => {
      finished = false;
      expect.true('the train finished its queue', false, String(error));
    });
    stopKills.abort();
    await killing;
    // No replica may act any more before the sandbox is read: each stops (SIGTERM, exit 0).
    for (let i = 0; i < replicas.length; i++) {
      const code = await replicas[i]!.stop();
      if (code !== 0) {
        crashes++;
        unexpected.push(
          `replica ${i} exited with ${code} on SIGTERM`,
          ...notableLines(replicas[i]!.output()),
        );
      }
    }
    await w.ci.idle();

    // Outcomes, from the sandbox.
    const landed: number[] = [];
    const removed: number[] = [];
    const problems: string[] = [];
    for (const mr of w.mergeRequests) {
      const notes = removalNotes(mr.id);
      const accepted = w.sandbox.ctx.db.data.events.filter(
        (e) => e.action_name === 'accepted' && e.target_type === 'MergeRequest' && e.target_id === mr.id,
      ).length;
      if (stateOf(mr.id) === 'merged') {
        landed.push(mr.position);
        if (accepted !== 1) problems.push(`!${mr.iid} merged ${accepted} times`);
        if (notes.length > 0) problems.push(`!${mr.iid} merged, with ${notes.length} bot comment(s)`);
      } else {
        if (notes.length === 1 && notes[0]!.body.startsWith(REMOVED)) removed.push(mr.position);
        problems.push(
          ...(notes.length === 1 && notes[0]!.body.startsWith(REMOVED)
            ? []
            : [
                `!${mr.iid} ${stateOf(mr.id)} with ${notes.length} bot comments: ${notes.map((n) => n.body.slice(0, 80)).join(' | ')}`,
              ]),
        );
      }
    }
    expect.equal('landed (positions)', landed.join(' '), w.ideal.landed.join(' '));
    expect.equal('removed with one comment (positions)', removed.join(' '), w.ideal.failed.join(' '));
    expect.zero(
      'merge requests not landed once nor removed with one comment',
      problems.length,
      problems.join('; '),
    );

    // Master: fast-forwards only, to tested car commits; each head merged once; 0 broken commits.
    const carPushes = w.pushes.filter((p) => p.byBot && isTrainRef(p.ref) && !isDeletion(p));
    const landings = w.pushes.filter((p) => p.ref === 'refs/heads/master');
    const notForward: string[] = [];
    for (const push of landings) {
      const ff =
        !isDeletion(push) &&
        (await w.git(['merge-base', '--is-ancestor', push.before, push.after])).code === 0;
      if (!ff) notForward.push(`${push.before.slice(0, 7)} -> ${push.after.slice(0, 7)}`);
    }
    expect.zero('pushes of master that were not fast-forwards', notForward.length, notForward.join(', '));
    const tested = new Set(carPushes.map((p) => p.after));
    const untested = landings.filter((p) => !tested.has(p.after)).map((p) => p.after.slice(0, 7));
    expect.zero('master pushed to a commit no train branch held', untested.length, untested.join(', '));
    const parentsOf = async (sha: string) =>
      (await w.git(['rev-list', '--parents', '-n', '1', sha])).stdout.trim().split(' ').slice(1);
    const line = (await w.git(['rev-list', '--first-parent', 'master'])).stdout.trim().split('\n');
    const mergedHeads = new Map<string, number>();
    let broken = 0;
    for (const sha of line) {
      const second = (await parentsOf(sha))[1];
      if (second) mergedHeads.set(second, (mergedHeads.get(second) ?? 0) + 1);
      if (!(await w.ci.passes(w.projectId, sha))) broken++;
    }
    expect.zero('broken commits on master (first-parent line)', broken);
    const twice = w.mergeRequests
      .filter((mr) => (mergedHeads.get(mr.head) ?? 0) > 1)
      .map((mr) => `!${mr.iid}`);
    expect.zero('heads merged into master more than once', twice.length, twice.join(', '));
    const headsLanded = w.mergeRequests.filter((mr) => mergedHeads.has(mr.head)).map((mr) => mr.position);
    expect.equal('heads merged into master (positions)', headsLanded.join(' '), w.ideal.landed.join(' '));

    // One car, one commit: (branch, base, head) pushed with one sha only, but for the queue's retries
    // of a failed car (`retries`, default 1: docs/merge-queue.md#flaky-ci): a new commit of the same
    // car, pushed after the build of the one before it failed, at most RETRIES times.
    const cars = new Map<string, { sha: string; seq: number }[]>();
    for (const push of carPushes) {
      const [base, head] = await parentsOf(push.after);
      const key = `${push.ref.slice('refs/heads/'.length)} on ${base?.slice(0, 7)} with ${head?.slice(0, 7)}`;
      const pushed = cars.get(key) ?? [];
      if (!pushed.some((one) => one.sha === push.after)) pushed.push({ sha: push.after, seq: push.seq });
      cars.set(key, pushed);
    }
    const failedBefore = (sha: string, seq: number) =>
      w.failedBuilds.some((failed) => failed.sha === sha && failed.afterPushes < seq);
    const retried = (pushed: { sha: string; seq: number }[]) =>
      pushed.length - 1 <= RETRIES &&
      pushed.slice(1).every((one, i) => failedBefore(pushed[i]!.sha, one.seq));
    const differing = [...cars]
      .filter(([, pushed]) => pushed.length > 1 && !retried(pushed))
      .map(([key, pushed]) => `${key}: ${pushed.map((one) => one.sha.slice(0, 7)).join(', ')}`);
    expect.zero(
      'cars pushed with two different commits (not a retry of a failed build)',
      differing.length,
      differing.join('; '),
    );
    const retries = [...cars.values()].filter((pushed) => pushed.length > 1).length;
    const left = (await trainBranches()).map((b) => b.name);
    expect.zero('train branches left', left.length, left.join(', '));

    // The bot's state: nothing queued, nothing parked.
    const active = (await queueRows()).filter((row) => row.left === undefined).length;
    expect.zero('merge requests still queued', active);
    const parkedActions = await count(
      `SELECT count(*) AS n FROM ${table('hookbot_outbox')} WHERE parked_seq IS NOT NULL`,
    );
    const parkedDeliveries = await count(`SELECT count(*) AS n FROM ${table('hookbot_parked_deliveries')}`);
    expect.zero('parked actions', parkedActions);
    expect.zero('parked deliveries', parkedDeliveries);
    expect.zero('unexpected replica exits', crashes, unexpected.join('\n'));
    const made = kills.length;
    expect.true(
      'a replica was killed while it drove the train',
      !finished || killsDriving > 0,
      kills.join('; '),
    );
    const lb = balancer.figures();
    await balancer.close();

    return {
      name: 'train-replicas',
      seconds: (performance.now() - started) / 1000,
      figures: {
        replicas: replicas.length,
        merge_requests: w.mergeRequests.length,
        depth: DEPTH,
        kills: made,
        kills_driving: killsDriving,
        kills_after_car_push: killed['after a car push'],
        kills_while_driving: killed['while driving'],
        kills_after_failed_build: killed['after a failed build'],
        kills_after_landing_push: killed['after a landing push'],
        events: kills.join('; ') || 'none',
        landed: landed.length,
        removed: removed.length,
        ideal: `${w.ideal.landed.length} landed, ${w.ideal.failed.length} removed`,
        car_pushes: carPushes.length,
        landing_pushes: landings.length,
        cars_built: cars.size,
        cars_retried: retries,
        ci_runs: w.ci.runs,
        broken,
        restart_ms_max: Math.round(Math.max(0, ...restartMs)),
        deliveries: `${lb.forwarded} passed on, ${lb.retried} tries a replica could not take, ${lb.dropped} dropped`,
      },
      failures: expect.failures,
      totals: { kills: made, crashes },
    };
  } finally {
    stopKills.abort();
    for (const replica of replicas) await replica?.kill9();
    await world?.close();
    await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await db.end().catch(() => undefined);
  }
}
