/**
 * The world of the train-replicas scenario (train-replicas.ts), in this process: the sandbox with a
 * bot user (a master of group `acme`, with a password for git over HTTP), a CI user and project
 * `acme/web` whose master is protected; the simulated CI of the merge queue's tests building every
 * pushed commit (test/helpers/simulated-ci.ts: the semantic check, a few hundred ms to about a second
 * per build); the workload's merge requests opened (not labelled); a load balancer in front of the
 * replicas, which the project's hook points at; and every push to the project recorded as the sandbox
 * tells its listeners (`ctx.on.push`), for the scenario's checks of what was pushed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { idealOutcome, trainWorkload, type TrainWorkload } from '../../bench/train-workload.ts';
import { createClient, type Client } from '../../src/api/client.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';
import { makeSecret } from './harness.ts';

const run = promisify(execFile);
const TRAIN_BOT = 'hookbot';
const NULL_SHA = '0000000000000000000000000000000000000000';

/**
 * Eight merge requests in queue order, each writing files of its own (no textual conflict): a rename
 * of `alpha` (2) and a new caller of the old name (5), which fails once the rename landed; one broken
 * alone (4, it calls a name nobody defines); the others call `foo`, always defined. Ten and more are
 * the benchmark's workload (bench/train-workload.ts), four pairs and one broken alone.
 */
export function workloadOf(n: number): TrainWorkload {
  if (n >= 10) return trainWorkload(n);
  if (n !== 8) throw new Error('the train-replicas workload has 8 merge requests, or 10 and more');
  const special: Record<number, { kind: string; files: Record<string, string> }> = {
    2: { kind: 'rename alpha', files: { 'lib-alpha.txt': 'def alpha_v2\n' } },
    4: { kind: 'broken alone', files: { 'broken.txt': 'calls: nowhere\n' } },
    5: { kind: 'call alpha', files: { 'use-alpha.txt': 'calls: alpha\n' } },
  };
  return {
    base: { 'lib-alpha.txt': 'def alpha\n' },
    changes: Array.from({ length: n }, (_, i) => {
      const position = i + 1;
      return {
        position,
        branch: `train-${String(position).padStart(2, '0')}`,
        ...(special[position] ?? { kind: 'plain', files: { [`plain-${position}.txt`]: 'calls: foo\n' } }),
      };
    }),
  };
}

export interface OpenedMergeRequest {
  id: number;
  iid: number;
  position: number;
  kind: string;
  /** Its source head when opened (nobody pushes it afterwards). */
  head: string;
}

export interface RecordedPush {
  /** In the order the sandbox told its listeners. */
  seq: number;
  ref: string;
  before: string;
  after: string;
  byBot: boolean;
}

/** A build of a train branch's commit that failed (the CI's status, as the sandbox told its listeners). */
export interface FailedBuild {
  seq: number;
  sha: string;
  ref: string;
  /** How many pushes the sandbox had told when the build failed (a later push has a higher `seq`). */
  afterPushes: number;
}

export interface Balancer {
  /** `http://127.0.0.1:PORT/hooks`. */
  url: string;
  /** Deliveries passed on, tries a replica could not take, deliveries no replica took (502). */
  figures(): { forwarded: number; retried: number; dropped: number };
  close(): Promise<void>;
}

export interface TrainWorld {
  sandbox: Sandbox;
  admin: Client;
  ci: SimulatedCi;
  projectId: number;
  botUserId: number;
  botToken: string;
  botPassword: string;
  dir: string;
  workload: TrainWorkload;
  /** What an ideal queue does with the workload (positions). */
  ideal: { landed: number[]; failed: number[] };
  mergeRequests: OpenedMergeRequest[];
  /** Every push to the project since the merge requests were opened. */
  pushes: RecordedPush[];
  /** Failed builds of train branches' commits since the merge requests were opened. */
  failedBuilds: FailedBuild[];
  /** Resolves with the first push after `seq` that `match` accepts (or `undefined` at `signal`). */
  nextPush(
    after: number,
    match: (push: RecordedPush) => boolean,
    signal: AbortSignal,
  ): Promise<RecordedPush | undefined>;
  /** Resolves with the first failed build after `seq` (or `undefined` at `signal`). */
  nextFailedBuild(after: number, signal: AbortSignal): Promise<FailedBuild | undefined>;
  /** Runs git in the project's bare repository in the sandbox; the exit code and stdout. */
  git(args: string[]): Promise<{ code: number; stdout: string }>;
  /** A load balancer in front of `ports` (round robin; a replica that cannot take a delivery: the next). */
  startBalancer(ports: readonly number[]): Promise<Balancer>;
  close(): Promise<void>;
}

export async function createTrainWorld(options: { mergeRequests: number }): Promise<TrainWorld> {
  const workload = workloadOf(options.mergeRequests);
  const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-reliability-train-'));
  const sandbox = await startSandbox({
    seed: 'empty',
    adminToken: makeSecret('admin-token'),
    hookTimeoutMs: 10_000,
  });
  const { db } = sandbox.ctx;
  const botToken = makeSecret('api-token');
  const botPassword = makeSecret('git-password');
  const ciToken = makeSecret('ci-token');
  const ciPassword = makeSecret('ci-password');
  const bot = addUser(db, { username: TRAIN_BOT, private_token: botToken, password: botPassword });
  const ciUser = addUser(db, { username: 'train-ci', private_token: ciToken, password: ciPassword });
  // The bot is a master of the group (it pushes the protected master); the CI a developer.
  const group = addGroup(db, {
    name: 'acme',
    owner_id: 1,
    members: [
      { user_id: bot.id, access_level: 40 },
      { user_id: ciUser.id, access_level: 30 },
    ],
  });
  const project = await addProject(sandbox.ctx, {
    name: 'web',
    namespace_id: group.id,
    creator_id: 1,
    initialFiles: { ...INITIAL_FILES, ...workload.base },
  });
  const admin = createClient({ baseUrl: sandbox.url, token: sandbox.adminToken, retry: { limit: 0 } });
  await admin.branches.protect(project.id, 'master');
  const ci = startSimulatedCi(sandbox, {
    token: ciToken,
    git: { username: 'train-ci', password: ciPassword },
    buildMs: 300,
    buildJitterMs: 700,
    parallel: 16,
  });
  const repo = path.join(sandbox.ctx.reposDir!, `${project.id}.git`);
  const git = async (args: string[]) => {
    try {
      const { stdout } = await run('git', ['-C', repo, ...args], { env: { PATH: process.env.PATH ?? '' } });
      return { code: 0, stdout };
    } catch (error) {
      return { code: (error as { code?: number }).code ?? 1, stdout: '' };
    }
  };

  const mergeRequests: OpenedMergeRequest[] = [];
  for (const change of workload.changes) {
    await admin.branches.create(project.id, { branch_name: change.branch, ref: 'master' });
    for (const [file, content] of Object.entries(change.files)) {
      const update = Object.hasOwn(INITIAL_FILES, file) || Object.hasOwn(workload.base, file);
      const response = await fetch(`${sandbox.apiUrl}/projects/${project.id}/repository/files`, {
        method: update ? 'PUT' : 'POST',
        headers: { 'private-token': sandbox.adminToken, 'content-type': 'application/json' },
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
    const read = await admin.mergeRequests.get(project.id, mr.id);
    mergeRequests.push({
      id: mr.id,
      iid: mr.iid,
      position: change.position,
      kind: change.kind,
      head: read.sha!,
    });
  }
  await ci.idle();

  const pushes: RecordedPush[] = [];
  const failedBuilds: FailedBuild[] = [];
  const listeners = new Set<() => void>();
  sandbox.ctx.on.status.push((event) => {
    if (event.project.id !== project.id || !event.ref?.startsWith('hookbot/train/')) return;
    const latest = db.data.statuses.findLast((st) => st.project_id === project.id && st.sha === event.sha);
    if (latest?.status !== 'failed') return;
    failedBuilds.push({
      seq: failedBuilds.length + 1,
      sha: event.sha,
      ref: event.ref,
      afterPushes: pushes.length,
    });
    for (const listener of listeners) listener();
  });
  /** The first of `list` after `after` that `match` accepts, once it is there (undefined at `signal`). */
  const next = <T extends { seq: number }>(
    list: T[],
    after: number,
    match: (one: T) => boolean,
    signal: AbortSignal,
  ) =>
    new Promise<T | undefined>((resolve) => {
      const check = () => {
        const found = list.find((one) => one.seq > after && match(one));
        if (!found && !signal.aborted) return;
        listeners.delete(check);
        signal.removeEventListener('abort', check);
        resolve(found);
      };
      listeners.add(check);
      signal.addEventListener('abort', check);
      check();
    });
  sandbox.ctx.on.push.push((event) => {
    if (event.project.id !== project.id) return;
    pushes.push({
      seq: pushes.length + 1,
      ref: event.ref,
      before: event.before,
      after: event.after,
      byBot: event.user.id === bot.id,
    });
    for (const listener of listeners) listener();
  });
  const balancers: Server[] = [];

  return {
    sandbox,
    admin,
    ci,
    projectId: project.id,
    botUserId: bot.id,
    botToken,
    botPassword,
    dir,
    workload,
    ideal: idealOutcome(workload, INITIAL_FILES),
    mergeRequests,
    pushes,
    failedBuilds,
    nextPush: (after, match, signal) => next(pushes, after, match, signal),
    nextFailedBuild: (after, signal) => next(failedBuilds, after, () => true, signal),
    git,
    async startBalancer(ports) {
      const server = await balancer(ports);
      balancers.push(server.server);
      return server.balancer;
    },
    async close() {
      await ci.stop();
      for (const server of balancers) server.closeAllConnections();
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const isTrainRef = (ref: string) => ref.startsWith('refs/heads/hookbot/train/');
export const isDeletion = (push: RecordedPush) => push.after === NULL_SHA;

/** Passes one delivery to the replica on `port`: its answer, or undefined when it could not take it. */
function forward(
  port: number,
  req: IncomingMessage,
  body: Buffer,
): Promise<{ status: number; body: Buffer } | undefined> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'x-gitlab-event', 'x-gitlab-token']) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    headers['content-length'] = String(body.length);
    const out = request(
      { host: '127.0.0.1', port, path: '/hooks', method: 'POST', headers, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 502, body: Buffer.concat(chunks) }));
        res.on('error', () => resolve(undefined));
      },
    );
    out.on('timeout', () => out.destroy(new Error('timeout')));
    out.on('error', () => resolve(undefined));
    out.end(body);
  });
}

async function balancer(ports: readonly number[]): Promise<{ server: Server; balancer: Balancer }> {
  let turn = 0;
  let forwarded = 0;
  let retried = 0;
  let dropped = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const first = turn++;
        for (let k = 0; k < ports.length; k++) {
          const answer = await forward(ports[(first + k) % ports.length]!, req, body);
          // A dead replica refuses or resets; one starting or cut from its database answers 5xx.
          if (answer === undefined || answer.status >= 500) {
            retried++;
            continue;
          }
          forwarded++;
          res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
          return;
        }
        dropped++;
        res.writeHead(502).end('no replica took the delivery');
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    server,
    balancer: {
      url: `http://127.0.0.1:${port}/hooks`,
      figures: () => ({ forwarded, retried, dropped }),
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    },
  };
}
