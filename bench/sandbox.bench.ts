/**
 * The sandbox's speed (issue 31): p50, p99 and the slowest answer of each kind of write (issue
 * create, note, label change, status, file commit, branch creation, merge, git push of 1 and of 21
 * commits), at 1 and at 16 concurrent callers, and the start-up time; measured from outside over
 * HTTP and git (bench/sandbox-load.ts). Targets: every API write's p99 under 50 ms at 16 callers, no
 * answer past 2 s, start-up under 1 s.
 *
 * The sandbox runs in its own process on the server's core (bench/sandbox-server.ts, `taskset`),
 * this process (the load generator, and the git clients it starts) on the other. A do-nothing server
 * measured with the same load generator shows its ceiling; a push to a bare repository on disk
 * without any server shows what git alone costs. With `BENCH_SANDBOX_BASE=<checkout>` (e.g. a
 * `git worktree` of an older commit, with node_modules linked) the same load runs against that
 * checkout's sandbox in the same run, interleaved operation by operation: the `base_*` figures.
 * Run alone with `npm run bench -- sandbox`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canPin, onLoadCore, onServerCore } from './pinning.ts';
import {
  client,
  closedLoop,
  gitPush,
  hookReceiver,
  makeChains,
  makeWorld,
  percentile,
  timedWrite,
  type World,
} from './sandbox-load.ts';

type Figures = Record<string, number | string>;

const HERE = path.resolve(import.meta.dirname, '..');
/** Rounds of each measurement for this code (the base, much slower, runs one). */
const ROUNDS = Number(process.env.BENCH_SANDBOX_ROUNDS ?? 3);
/** Only these operations (comma-separated names, e.g. `push_1,push_21`) when given: a partial run. */
const ONLY = (process.env.BENCH_SANDBOX_OPS ?? '').split(',').filter(Boolean);
const BASE = process.env.BENCH_SANDBOX_BASE;
/** Operations per caller: alone, and each of 16 callers. */
interface Phase {
  callers: number;
  /** API writes per caller. */
  api: number;
  merges: number;
  pushes: number;
}
const PHASES: Phase[] = [
  { callers: 1, api: Number(process.env.BENCH_SANDBOX_N1 ?? 40), merges: 30, pushes: 20 },
  { callers: 16, api: Number(process.env.BENCH_SANDBOX_N16 ?? 10), merges: 8, pushes: 5 },
];

interface Server {
  url: string;
  importMs: number;
  startMs: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

async function startServer(mode: 'sandbox' | 'noop', checkout = HERE): Promise<Server> {
  const [command, args] = onServerCore(process.execPath, [
    '--import',
    'tsx',
    path.join(HERE, 'bench/sandbox-server.ts'),
    mode,
    checkout,
  ]);
  const child = spawn(command, args, { cwd: checkout, stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /^READY .*$/m.exec(text);
      if (match) resolve(match[0]);
    });
    child.once('exit', (code) => reject(new Error(`the ${mode} server exited with ${code}`)));
  });
  const [, url = '', importMs = '0', startMs = '0'] = line.split(' ');
  return {
    url,
    importMs: Number(importMs),
    startMs: Number(startMs),
    child,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `hookbot sandbox` of a checkout, from the spawn to its "serving" line. */
async function cliStartup(checkout: string): Promise<number> {
  const [command, args] = onServerCore(process.execPath, [
    path.join(checkout, 'bin/hookbot.js'),
    'sandbox',
    '--port',
    '0',
  ]);
  const t0 = performance.now();
  const child = spawn(command, args, { cwd: checkout, stdio: ['ignore', 'pipe', 'inherit'] });
  const ms = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('serving http')) resolve(performance.now() - t0);
    });
    child.once('exit', (code) => reject(new Error(`hookbot sandbox exited with ${code}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r1 = (x: number) => Number(x.toFixed(1));

interface Target {
  label: '' | 'base_';
  server: Server;
  world: World;
}

type Operation = (target: Target, phase: Phase, tag: string) => Promise<number[]>;

const pid = (t: Target) => t.world.projectId;

const OPERATIONS: Record<string, Operation> = {
  issue: (t, phase, tag) =>
    closedLoop(phase.callers, phase.api, (k, i) =>
      timedWrite(
        t.world.api.call('POST', `/projects/${pid(t)}/issues`, { title: `${tag} ${k}-${i}` }),
        'issue',
      ),
    ),
  note: (t, phase, tag) =>
    closedLoop(phase.callers, phase.api, (k, i) =>
      timedWrite(
        t.world.api.call('POST', `/projects/${pid(t)}/issues/${t.world.issueIds[k]}/notes`, {
          body: `${tag} note ${i}`,
        }),
        'note',
      ),
    ),
  label: (t, phase) =>
    closedLoop(phase.callers, phase.api, (k, i) =>
      timedWrite(
        t.world.api.call('PUT', `/projects/${pid(t)}/issues/${t.world.issueIds[k]}`, {
          labels: i % 2 === 0 ? 'bench-a,bench-b' : 'bench-a',
        }),
        'label',
      ),
    ),
  status: (t, phase, tag) =>
    closedLoop(phase.callers, phase.api, (k, i) =>
      timedWrite(
        // With its ref, as a CI runner posts it.
        t.world.api.call('POST', `/projects/${pid(t)}/statuses/${t.world.masterSha}`, {
          state: 'success',
          ref: 'master',
          name: `${tag}-${k}-${i}`,
        }),
        'status',
      ),
    ),
  file: async (t, phase, tag) => {
    for (let k = 0; k < phase.callers; k++)
      await timedWrite(
        t.world.api.call('POST', `/projects/${pid(t)}/repository/branches`, {
          branch_name: `files-${tag}-${k}`,
          ref: 'master',
        }),
        'branch for files',
      );
    return closedLoop(phase.callers, phase.api, (k, i) =>
      timedWrite(
        t.world.api.call('POST', `/projects/${pid(t)}/repository/files`, {
          file_path: `files/${tag}/${k}/${i}.txt`,
          branch_name: `files-${tag}-${k}`,
          content: `file ${i}\n`,
          commit_message: `Add file ${i}`,
        }),
        'file',
      ),
    );
  },
  branch: (t, phase, tag) =>
    closedLoop(phase.callers, phase.api, (k, i) =>
      timedWrite(
        t.world.api.call('POST', `/projects/${pid(t)}/repository/branches`, {
          branch_name: `branch-${tag}-${k}-${i}`,
          ref: 'master',
        }),
        'branch',
      ),
    ),
  merge: async (t, phase, tag) => {
    // Each caller merges its own merge requests into its own target branch, one after the other.
    const chains = [];
    for (let k = 0; k < phase.callers; k++)
      for (let i = 0; i < phase.merges; i++) chains.push({ name: `mr-${tag}-${k}-${i}`, length: 1 });
    const shas = await makeChains(t.world.local, t.world.masterSha, chains);
    const refspecs = [...shas].map(([name, [sha]]) => `${sha}:refs/heads/${name}`);
    for (let k = 0; k < phase.callers; k++)
      refspecs.push(`${t.world.masterSha}:refs/heads/target-${tag}-${k}`);
    await gitPush(t.world.local, t.world.gitUrl, refspecs);
    const ids: number[][] = [];
    for (let k = 0; k < phase.callers; k++) {
      ids.push([]);
      for (let i = 0; i < phase.merges; i++) {
        const mr = await t.world.api.call('POST', `/projects/${pid(t)}/merge_requests`, {
          source_branch: `mr-${tag}-${k}-${i}`,
          target_branch: `target-${tag}-${k}`,
          title: `Merge ${k}-${i}`,
        });
        if (mr.status !== 200 && mr.status !== 201) throw new Error(`merge request: ${mr.status}`);
        ids[k]!.push((mr.body as { id: number }).id);
      }
    }
    return closedLoop(phase.callers, phase.merges, (k, i) =>
      timedWrite(t.world.api.call('PUT', `/projects/${pid(t)}/merge_requests/${ids[k]![i]}/merge`), 'merge'),
    );
  },
  push_1: (t, phase, tag) => pushes(t, phase, tag, 1),
  push_21: (t, phase, tag) => pushes(t, phase, tag, 21),
};

/** Each caller fast-forwards its own branch by `size` commits per push (its first push makes it). */
async function pushes(t: Target, phase: Phase, tag: string, size: number) {
  const chains = Array.from({ length: phase.callers }, (_, k) => ({
    name: `push${size}-${tag}-${k}`,
    length: size * phase.pushes,
  }));
  const shas = await makeChains(t.world.local, t.world.pushes.masterSha, chains);
  return closedLoop(phase.callers, phase.pushes, (k, i) => {
    const name = chains[k]!.name;
    const sha = shas.get(name)![(i + 1) * size - 1]!;
    return gitPush(t.world.local, t.world.pushes.gitUrl, [`${sha}:refs/heads/${name}`]);
  });
}

/** The same pushes to a bare repository on disk: git's own cost, no server. */
async function gitAlone(dir: string, world: World, phase: Phase, size: number) {
  const floor = path.join(dir, `floor-${size}-${phase.callers}.git`);
  await new Promise<void>((resolve, reject) =>
    spawn('git', ['init', '--quiet', '--bare', floor]).on('close', (c) =>
      c === 0 ? resolve() : reject(new Error('init')),
    ),
  );
  const chains = Array.from({ length: phase.callers }, (_, k) => ({
    name: `floor${size}-${phase.callers}-${k}`,
    length: size * phase.pushes,
  }));
  const shas = await makeChains(world.local, world.masterSha, chains);
  return closedLoop(phase.callers, phase.pushes, (k, i) => {
    const name = chains[k]!.name;
    return gitPush(world.local, floor, [`${shas.get(name)![(i + 1) * size - 1]!}:refs/heads/${name}`]);
  });
}

export async function run(): Promise<Figures> {
  const figures: Figures = { pinned: canPin ? 'yes' : 'no' };
  const dir = await mkdtemp(path.join(tmpdir(), 'hookbot-bench-sandbox-'));
  const receiver = await hookReceiver();
  const targets: Target[] = [];
  try {
    // Start-up: the CLI from spawn to its "serving" line, and startSandbox() itself.
    const checkouts: ['' | 'base_', string][] = [
      ['', HERE],
      ...(BASE ? [['base_', BASE] as ['base_', string]] : []),
    ];
    for (const [label, checkout] of checkouts) {
      const cli: number[] = [];
      const own: number[] = [];
      for (let i = 0; i < 3; i++) {
        cli.push(await cliStartup(checkout));
        const server = await startServer('sandbox', checkout);
        own.push(server.startMs);
        await server.stop();
      }
      figures[`${label}startup_cli_ms`] = r1(median(cli));
      figures[`${label}startup_in_process_ms`] = r1(median(own));
    }
    for (const [label, checkout] of checkouts) {
      const server = await startServer('sandbox', checkout);
      const world = await makeWorld(
        server.url,
        receiver.url,
        16,
        path.join(dir, `${label || 'current'}.git`),
      );
      targets.push({ label, server, world });
    }

    await onLoadCore(async () => {
      // Warm-up: a few of each API write, not counted.
      for (const target of targets)
        for (const name of ['issue', 'note', 'label', 'status', 'branch'])
          await OPERATIONS[name]!(target, { callers: 1, api: 5, merges: 0, pushes: 0 }, `warm-${name}`);

      const noop = await startServer('noop');
      try {
        const api = client(noop.url);
        const p50: number[] = [];
        const p99: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const samples = await closedLoop(16, 40, (k, i) =>
            timedWrite(api.call('POST', '/noop', { k, i }), 'noop'),
          );
          p50.push(percentile(samples, 50));
          p99.push(percentile(samples, 99));
        }
        figures.noop_c16_p50_ms = r1(median(p50));
        figures.noop_c16_p99_ms = r1(median(p99));
        api.agent.destroy();
      } finally {
        await noop.stop();
      }

      let slowest = 0;
      let baseSlowest = 0;
      // Each phase runs ROUNDS times for this code (each round on its own refs), once for the base;
      // p50 and p99 are the median of the rounds' (a shared machine's noise hits single rounds),
      // the slowest answer the slowest of all.
      for (const [name, operation] of Object.entries(OPERATIONS).filter(
        ([name]) => ONLY.length === 0 || ONLY.includes(name),
      ))
        for (const phase of PHASES)
          for (const target of targets) {
            const rounds = target.label === '' ? ROUNDS : 1;
            const p50: number[] = [];
            const p99: number[] = [];
            let max = 0;
            for (let round = 0; round < rounds; round++) {
              const samples = await operation(
                target,
                phase,
                `${target.label || 'cur'}${phase.callers}r${round}`,
              );
              p50.push(percentile(samples, 50));
              p99.push(percentile(samples, 99));
              max = Math.max(max, ...samples);
            }
            const key = `${target.label}${name}_c${phase.callers}`;
            figures[`${key}_p50_ms`] = r1(median(p50));
            figures[`${key}_p99_ms`] = r1(median(p99));
            figures[`${key}_max_ms`] = r1(max);
            if (target.label === '') slowest = Math.max(slowest, max);
            else baseSlowest = Math.max(baseSlowest, max);
          }
      figures.max_ms = r1(slowest);
      if (BASE) figures.base_max_ms = r1(baseSlowest);

      for (const size of [1, 21])
        for (const phase of PHASES) {
          const samples = await gitAlone(dir, targets[0]!.world, phase, size);
          figures[`git_alone_push_${size}_c${phase.callers}_p50_ms`] = r1(percentile(samples, 50));
          figures[`git_alone_push_${size}_c${phase.callers}_p99_ms`] = r1(percentile(samples, 99));
        }
    });
    figures.deliveries = receiver.count();
    return figures;
  } finally {
    for (const target of targets) {
      target.world.api.agent.destroy();
      await target.server.stop();
    }
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
