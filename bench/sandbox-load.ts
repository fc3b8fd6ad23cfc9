/**
 * The sandbox benchmark's world and load (bench/sandbox.bench.ts): everything goes over HTTP and git
 * from outside, as the tests and the bot talk to it, so the same load runs against any version of the
 * sandbox (the current code and an older checkout side by side).
 *
 * The world, made through the API as the administrator: a project with a repository and a hook to a
 * receiver in this process (every write fires deliveries, as in the tests), a user with a password
 * for git, and per caller an issue (notes, labels), a branch (file commits), a target branch and
 * merge requests into it (merges), and a branch to push to.
 *
 * The load generator stays trivial: node:http with keep-alive, one request after the other per
 * caller (closed loop), the time from the request to the end of its answer.
 */
import { execFile, spawn } from 'node:child_process';
import { createServer, request, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const ADMIN_TOKEN = 'bench-admin-token';
const PUSHER = { username: 'bench-pusher', password: 'bench-pusher-password' };

export interface Answer {
  status: number;
  body: unknown;
  ms: number;
}

/** A JSON client for one server (keep-alive, as the bot's client). */
export function client(base: string, sockets = 32) {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  const url = new URL(base);
  return {
    agent,
    call(method: string, path: string, body?: unknown): Promise<Answer> {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const t0 = performance.now();
      return new Promise((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            method,
            path: `/api/v3${path}`,
            agent,
            headers: {
              'private-token': ADMIN_TOKEN,
              ...(payload === undefined
                ? {}
                : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              const ms = performance.now() - t0;
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown = text;
              try {
                parsed = text ? JSON.parse(text) : undefined;
              } catch {
                // not JSON
              }
              resolve({ status: res.statusCode ?? 0, body: parsed, ms });
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
  };
}
export type Client = ReturnType<typeof client>;

async function ok<T = { id: number }>(answer: Promise<Answer>, what: string): Promise<T> {
  const a = await answer;
  if (a.status >= 300) throw new Error(`${what}: ${a.status} ${JSON.stringify(a.body)}`);
  return a.body as T;
}

function run(file: string, args: string[], options: { cwd?: string; input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      {
        cwd: options.cwd,
        maxBuffer: 64 * 1024 * 1024,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: options.cwd ?? '/tmp',
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          LC_ALL: 'C',
        },
      },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${file} ${args[0]}: ${stderr}`)) : resolve(stdout),
    );
    // git may exit before reading its input (or never read it): that EPIPE is not an error here.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.input ?? '');
  });
}

/** A receiver of hook deliveries that answers at once. */
export async function hookReceiver(): Promise<{ url: string; count: () => number; close(): Promise<void> }> {
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count: () => received,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface World {
  api: Client;
  projectId: number;
  /** `http://user:password@host/ns/project.git` of the pusher. */
  gitUrl: string;
  /** A local repository holding every commit the pushes send. */
  local: string;
  masterSha: string;
  issueIds: number[];
  /**
   * A second project for the git pushes alone, so that they are measured on a repository of their
   * own, not behind the hundreds of refs the other writes leave (which every push's ref
   * advertisement and connectivity check would walk).
   */
  pushes: { gitUrl: string; masterSha: string };
}

/** The project, the pusher, the hook and an issue per caller. */
export async function makeWorld(
  base: string,
  hookUrl: string,
  callers: number,
  local: string,
): Promise<World> {
  const api = client(base);
  const user = await ok(
    api.call('POST', '/users', {
      email: 'pusher@example.com',
      name: 'Bench Pusher',
      ...PUSHER,
    }),
    'create the pusher',
  );
  const project = await ok(api.call('POST', '/projects', { name: 'bench' }), 'create the project');
  await ok(
    api.call('POST', `/projects/${project.id}/members`, { user_id: user.id, access_level: 40 }),
    'add the pusher',
  );
  await ok(
    api.call('POST', `/projects/${project.id}/repository/files`, {
      file_path: 'README.md',
      branch_name: 'master',
      content: '# bench\n',
      commit_message: 'First commit',
    }),
    'first commit',
  );
  await ok(
    api.call('POST', `/projects/${project.id}/hooks`, {
      url: hookUrl,
      push_events: true,
      issues_events: true,
      merge_requests_events: true,
      tag_push_events: true,
      note_events: true,
      build_events: true,
      pipeline_events: true,
    }),
    'add the hook',
  );
  const issueIds: number[] = [];
  for (let k = 0; k < callers; k++)
    issueIds.push(
      (await ok(api.call('POST', `/projects/${project.id}/issues`, { title: `caller ${k}` }), 'issue')).id,
    );
  const pushProject = await ok(
    api.call('POST', '/projects', { name: 'bench-push' }),
    'create the push project',
  );
  await ok(
    api.call('POST', `/projects/${pushProject.id}/members`, { user_id: user.id, access_level: 40 }),
    'add the pusher to the push project',
  );
  await ok(
    api.call('POST', `/projects/${pushProject.id}/repository/files`, {
      file_path: 'README.md',
      branch_name: 'master',
      content: '# pushes\n',
      commit_message: 'First commit',
    }),
    'first commit of the push project',
  );
  const urlOf = (name: string) => {
    const url = new URL(`${base}/root/${name}.git`);
    url.username = PUSHER.username;
    url.password = PUSHER.password;
    return url.toString();
  };
  await run('git', ['init', '--quiet', '--bare', local]);
  await run('git', ['fetch', '--quiet', urlOf('bench'), 'master:refs/heads/master'], { cwd: local });
  await run('git', ['fetch', '--quiet', urlOf('bench-push'), 'master:refs/heads/push-master'], {
    cwd: local,
  });
  const masterSha = (await run('git', ['rev-parse', 'refs/heads/master'], { cwd: local })).trim();
  const pushSha = (await run('git', ['rev-parse', 'refs/heads/push-master'], { cwd: local })).trim();
  return {
    api,
    projectId: project.id,
    gitUrl: urlOf('bench'),
    local,
    masterSha,
    issueIds,
    pushes: { gitUrl: urlOf('bench-push'), masterSha: pushSha },
  };
}

/**
 * Commits made in one `git fast-import`: for each named chain, `length` commits on top of `from`,
 * each adding one file. Answers every commit of each chain, oldest first.
 */
export async function makeChains(
  local: string,
  from: string,
  chains: { name: string; length: number }[],
): Promise<Map<string, string[]>> {
  let stream = '';
  let mark = 0;
  const marks = new Map<string, number[]>();
  for (const chain of chains) {
    let parent = from;
    const own: number[] = [];
    for (let i = 0; i < chain.length; i++) {
      mark += 1;
      own.push(mark);
      const content = `${chain.name} ${i}\n`;
      const message = `${chain.name}: commit ${i + 1}\n`;
      stream += `commit refs/bench/${chain.name}\nmark :${mark}\n`;
      stream += `committer Bench <bench@example.com> ${1_700_000_000 + mark} +0000\n`;
      stream += `data ${Buffer.byteLength(message)}\n${message}`;
      stream += `from ${parent}\n`;
      stream += `M 100644 inline ${chain.name}/${i}.txt\ndata ${Buffer.byteLength(content)}\n${content}\n`;
      parent = `:${mark}`;
    }
    marks.set(chain.name, own);
  }
  const marksFile = `${local}/bench-marks-${process.pid}-${Date.now()}`;
  await run('git', ['fast-import', '--quiet', '--force', `--export-marks=${marksFile}`], {
    cwd: local,
    input: stream,
  });
  const sha = new Map<number, string>();
  for (const line of (await run('cat', [marksFile])).trim().split('\n')) {
    const [m = '', id = ''] = line.split(' ');
    sha.set(Number(m.slice(1)), id);
  }
  await run('rm', ['-f', marksFile]);
  return new Map([...marks].map(([name, own]) => [name, own.map((m) => sha.get(m)!)]));
}

/** `git push <url> <refspecs>`, timed from outside (the client's own work included). */
export function gitPush(local: string, url: string, refspecs: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['push', '--quiet', url, ...refspecs], {
      cwd: local,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: local,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_TERMINAL_PROMPT: '0',
        LC_ALL: 'C',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`git push: ${stderr}`)),
    );
  });
}

/** `callers` closed loops of `perCaller` operations each; the latency of every one. */
export async function closedLoop(
  callers: number,
  perCaller: number,
  operation: (caller: number, i: number) => Promise<number>,
): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: callers }, async (_, k) => {
      for (let i = 0; i < perCaller; i++) latencies.push(await operation(k, i));
    }),
  );
  return latencies;
}

/** An API write that must succeed; its latency. */
export async function timedWrite(answer: Promise<Answer>, what: string): Promise<number> {
  const a = await answer;
  if (a.status >= 300) throw new Error(`${what}: ${a.status} ${JSON.stringify(a.body)}`);
  return a.ms;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
