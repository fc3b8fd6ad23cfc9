/**
 * An opt-in simulated CI for the sandbox (`hookbot sandbox --ci <script>`, `sandbox.ci` of `npm
 * start`, `startSandbox({ ci })` or `startSimulatedCi` in code), for trying the merge queue offline,
 * the demo, the tests and the benchmarks. For each commit pushed to a branch of a project (a git push
 * over HTTP or SSH, a file commit, a merge, a new branch: whatever tells `ctx.on.push`) it posts
 * `pending`, waits for a free runner, checks the commit out, runs the script there (exit 0:
 * `success`, anything else: `failed`), waits what is left of the build's duration (counted from the
 * runner: checkout and script included) and posts the result.
 *
 * It talks to the sandbox as a runner of that era would: a push only wakes it (8.x's own CI made its
 * builds on push the same way), then it posts statuses through the API and fetches the commit over git
 * HTTP, as its own user (ci-user.ts; in code, any user given). It builds the projects that user may post
 * statuses on (developer or above; every project for its administrator).
 *
 * Decisions (docs/sandbox.md#simulated-ci):
 * - One build per commit and project: a commit pushed again (to another branch, or a branch fast-
 *   forwarded to a commit already built, as a merge train lands) is not built again; its verdict is
 *   the commit's, posted for that branch too once the build has one (a CI of that era builds each
 *   ref, and the bot reads a train car's statuses on its own branch). Remembered for the last
 *   100,000 commits.
 * - Bounded: `parallel` builds at once (a build holds its runner from the wait to the result, as a
 *   runner does), at most `queueLimit` waiting; one past that gets `canceled` with the reason.
 * - `pending` is posted when the build is queued, the result when it ends; the script's output never
 *   goes to the API (it is the user's own): the status says `exit code N`, and the log of the person
 *   running the sandbox gets the last lines of a failed build.
 * - Flaky on request (`flakeRate`, `seed`; tests and benchmarks): a build whose commit passes fails
 *   anyway with that probability, `failed` with the description `flaked`. The draw is seeded and keyed
 *   by the commit's tree and how many builds of that tree came before in this CI (not by time, nor by
 *   the sha, which holds commit dates): the same workload draws the same flakes run after run, and a
 *   commit made again with the same files (a car built again) draws again. `verdict` stays the true check.
 */
import { setMaxListeners } from 'node:events';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PushEvent, SandboxContext } from '../context.ts';
import type { ProjectRec } from '../db.ts';
import { pushWorkIdle } from '../git-access.ts';
import { accessLevel, DEVELOPER, pathWithNamespace } from '../permissions.ts';
import { buildUser } from './build-user.ts';
import { ciUser, type CiCredentials } from './ci-user.ts';
import { runScript, type ScriptResult } from './script.ts';
import { createWorkspace, type Workspace } from './workspace.ts';

const NULL_SHA = '0000000000000000000000000000000000000000';
const SEEN_LIMIT = 100_000;

/** One build: a commit of a project, and the branch whose push asked for it. */
export interface CiBuild {
  projectId: number;
  projectPath: string;
  branch: string;
  sha: string;
}

export interface SimulatedCiOptions {
  /** A shell command line (`sh -c`) run with the commit's files as its working directory; exit 0 is success. */
  script?: string;
  /** In code, instead of `script`: judges the commit's files (tests and benchmarks). */
  check?: (files: string, build: CiBuild, signal: AbortSignal) => Promise<boolean>;
  /** How long a build takes at least, from its runner to its result, checkout and script included (ms). Default 1000. */
  durationMs?: number;
  /** The status name posted. Default `ci/sandbox`. */
  name?: string;
  /** Builds at once (runners). Default 4. */
  parallel?: number;
  /** Builds waiting for a runner at most; the next ones are `canceled`. Default 1000. */
  queueLimit?: number;
  /** How long a script may run before it is killed and the build fails (ms). Default 10 minutes. */
  timeoutMs?: number;
  /** Whom it acts as. Default: its own administrator `sandbox-ci`, made at start (ci-user.ts). */
  as?: CiCredentials;
  /** Builds that post `pending` and never finish: a CI that never reports (tests, trying `status_timeout`). */
  hold?: (build: CiBuild) => boolean;
  /** Lines for the person running the sandbox: a failed build and the end of its output. */
  log?: (line: string) => void;
  /** Where its caches and build folders go. Default: the system's temporary folder. */
  workDir?: string;
  /** The share of passing builds that fail anyway (0 to 1): a flaky CI. Default 0. */
  flakeRate?: number;
  /** The seed of the flakes' draws (an integer). Default 1. */
  seed?: number;
}

export interface SimulatedCi {
  /** The status name it posts. */
  readonly name: string;
  /** Builds started since it started: one per new commit of a project (held ones included). */
  readonly runs: number;
  /** Builds that failed (flaked ones included). */
  readonly failures: number;
  /** Builds that failed only because of `flakeRate` (their commit passes). */
  readonly flakes: number;
  /** Builds queued or running (held ones not counted). */
  readonly running: number;
  /** Whether the commit passes the check (the script, or `check`), without posting anything or counting a run. */
  verdict(projectId: number, sha: string): Promise<boolean>;
  /** Resolves when no build is queued or running (held ones are not waited for). */
  idle(): Promise<void>;
  /** Stops: nothing more is posted, running scripts are killed, folders removed. */
  stop(): Promise<void>;
}

/** Checks the options a person gives (the CLI and the configuration say them in their own words first). */
function checked(options: SimulatedCiOptions) {
  const { script, check } = options;
  if ((script === undefined) === (check === undefined))
    throw new Error('the simulated CI needs exactly one of a script and a check');
  if (script !== undefined && script.trim() === '') throw new Error('the simulated CI script is empty');
  const count = (value: number | undefined, fallback: number, what: string, min: number) => {
    const n = value ?? fallback;
    if (!Number.isInteger(n) || n < min)
      throw new Error(`the simulated CI's ${what} must be an integer of at least ${min}`);
    return n;
  };
  return {
    durationMs: count(options.durationMs, 1000, 'duration', 0),
    parallel: count(options.parallel, 4, 'number of builds at once', 1),
    queueLimit: count(options.queueLimit, 1000, 'queue limit', 0),
    timeoutMs: count(options.timeoutMs, 10 * 60_000, 'time limit', 1),
    name: options.name ?? 'ci/sandbox',
    flakeRate: rate(options.flakeRate),
    seed: count(options.seed, 1, 'seed', Number.MIN_SAFE_INTEGER),
  };
}

function rate(value: number | undefined): number {
  const r = value ?? 0;
  if (!Number.isFinite(r) || r < 0 || r > 1)
    throw new Error("the simulated CI's flake rate must be between 0 and 1");
  return r;
}

/** A number in [0, 1) from a seed and a key: FNV-1a over the key, mixed with the seed, one mulberry32 step. */
export function flakeDraw(seed: number, key: string): number {
  let h = 0x811c9dc5 ^ (seed | 0);
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  let t = (h + 0x6d2b79f5) | 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

export function startSimulatedCi(ctx: SandboxContext, options: SimulatedCiOptions): SimulatedCi {
  const settings = checked(options);
  const { name } = settings;
  const credentials = options.as ?? ciUser(ctx);
  const log = options.log ?? (() => undefined);
  const apiUrl = () => `${ctx.baseUrl()}/api/v3`;
  const stopping = new AbortController();
  // Each running build listens to it once or twice (its wait, its script or check): bounded by `parallel`.
  setMaxListeners(Math.max(10, settings.parallel * 3), stopping.signal);
  // A script build runs as `nobody` under a root sandbox (build-user.ts); a check in code is the caller's own.
  const buildsAs = options.script !== undefined ? buildUser() : undefined;
  let workspace: Promise<Workspace> | undefined;
  const workspaceOf = () =>
    (workspace ??= createWorkspace(
      options.workDir ?? tmpdir(),
      credentials.git,
      buildsAs ? { buildsAs } : {},
    ));

  let runs = 0;
  let failures = 0;
  let flakes = 0;
  /** Flaky runs only: builds drawn so far per project and tree (a tree built again draws again). */
  const drawn = new Map<string, number>();
  /** Builds between their trigger and their result (held ones excluded). */
  const active = new Set<Promise<void>>();
  /** Posts of held builds, so `stop` waits for them. */
  const posting = new Set<Promise<void>>();
  /** Builds waiting for a runner, first in first served. */
  const waiters: (() => void)[] = [];
  let busy = 0;
  /** Builds triggered that hold no runner yet (their `pending` may still be on its way). */
  let queued = 0;
  /** Each commit's build (by project and sha): its final status, once it has one. */
  const seen = new Map<string, Promise<{ state: string; description: string }>>();
  /** The branches each commit's status was posted for (project, sha, branch). */
  const postedFor = new Set<string>();

  const projectPath = (project: ProjectRec) => pathWithNamespace(ctx.db, project);

  /** Whether the CI's user may post statuses on the project (what a runner enabled for it could do). */
  function buildsFor(project: ProjectRec): boolean {
    const user = ctx.db.data.users.find((u) => u.username === credentials.git.username);
    return user !== undefined && user.state === 'active' && accessLevel(ctx.db, project, user) >= DEVELOPER;
  }

  async function post(build: CiBuild, state: string, description?: string): Promise<void> {
    if (stopping.signal.aborted) return;
    try {
      const response = await fetch(`${apiUrl()}/projects/${build.projectId}/statuses/${build.sha}`, {
        method: 'POST',
        headers: { 'private-token': credentials.token, 'content-type': 'application/json' },
        body: JSON.stringify({ state, name, ref: build.branch, ...(description ? { description } : {}) }),
      });
      const answer = await response.text();
      if (!response.ok && !stopping.signal.aborted)
        log(
          `simulated CI: could not post ${state} on ${build.projectPath}@${build.sha.slice(0, 11)}: ${response.status} ${answer.slice(0, 200)}`,
        );
    } catch (error) {
      if (!stopping.signal.aborted)
        log(
          `simulated CI: could not post ${state} on ${build.projectPath}@${build.sha.slice(0, 11)}: ${String(error)}`,
        );
    }
  }

  async function runner(): Promise<void> {
    if (busy < settings.parallel) busy++;
    else await new Promise<void>((resolve) => waiters.push(resolve));
    queued--;
  }
  function release(): void {
    const next = waiters.shift();
    if (next) next();
    else busy--;
  }

  /** The commit's verdict: checked out over git, then the check or the script. */
  async function judge(build: CiBuild): Promise<ScriptResult> {
    const ws = await workspaceOf();
    const cloneUrl = `${ctx.baseUrl()}/${build.projectPath}.git`;
    const files = await ws.checkout({ id: build.projectId, cloneUrl }, build.sha);
    try {
      if (options.check) {
        const ok = await options.check(files, build, stopping.signal);
        return { ok, reason: ok ? 'passed' : 'the check failed', output: '' };
      }
      return await runScript(options.script!, files, build, {
        timeoutMs: settings.timeoutMs,
        signal: stopping.signal,
        ...(buildsAs ? { as: buildsAs } : {}),
      });
    } finally {
      await ws.release(files);
    }
  }

  /**
   * A commit built already, pushed to another branch: its build's verdict is posted for that branch
   * too, once the build has one (a CI of that era builds each ref it is pushed to; this one does not
   * run it again, so the runs stay one per commit).
   */
  async function relay(b: CiBuild, verdict: Promise<{ state: string; description: string }>): Promise<void> {
    await post(b, 'pending', 'the same commit is built on another branch');
    // A held build never ends, and a stop ends the wait: nothing more is posted then.
    const stopped = new Promise<undefined>((resolve) =>
      stopping.signal.addEventListener('abort', () => resolve(undefined), { once: true }),
    );
    const result = await Promise.race([verdict, stopped]);
    if (result) await post(b, result.state, result.description);
  }

  /** Whether a build whose commit passed fails anyway (`flakeRate`): seeded, keyed by tree and attempt. */
  async function isFlake(b: CiBuild): Promise<boolean> {
    if (settings.flakeRate === 0) return false;
    const tree = (await ctx.git.commit(b.projectId, b.sha))?.tree ?? b.sha;
    const key = `${b.projectId}:${tree}`;
    const attempt = drawn.get(key) ?? 0;
    if (drawn.size >= SEEN_LIMIT && attempt === 0) drawn.delete(drawn.keys().next().value!);
    drawn.set(key, attempt + 1);
    return flakeDraw(settings.seed, `${tree}:${attempt}`) < settings.flakeRate;
  }

  async function build(b: CiBuild, done: (state: string, description: string) => void): Promise<void> {
    await post(b, 'pending', 'waiting for a runner of the simulated CI');
    await runner();
    try {
      // The build takes `durationMs` from the moment it has a runner, its checkout and check included
      // (a CI's build time is its whole job): with several builds at once their checkouts overlap
      // their wait instead of adding to it, so a build of T reports after T, not T plus a fetch.
      const started = performance.now();
      let result: ScriptResult;
      try {
        result = await judge(b);
      } catch (error) {
        if (stopping.signal.aborted) return;
        result = { ok: false, reason: `could not build: ${String(error).slice(0, 200)}`, output: '' };
      }
      const left = settings.durationMs - (performance.now() - started);
      if (left > 0) await sleep(left, undefined, { signal: stopping.signal });
      if (stopping.signal.aborted) return;
      if (result.ok && (await isFlake(b))) {
        flakes++;
        result = { ok: false, reason: 'flaked', output: '' };
      }
      if (stopping.signal.aborted) return;
      if (!result.ok) {
        failures++;
        const tail = result.output.trimEnd().split('\n').slice(-20).join('\n');
        log(
          `simulated CI: ${b.projectPath}@${b.sha.slice(0, 11)} (${b.branch}) failed: ${result.reason}${tail ? `\n${tail}` : ''}`,
        );
      }
      done(result.ok ? 'success' : 'failed', result.ok ? 'passed' : result.reason);
      await post(b, result.ok ? 'success' : 'failed', result.ok ? 'passed' : result.reason);
    } catch (error) {
      if (!stopping.signal.aborted) throw error;
    } finally {
      // Ended without a verdict (stopped, or failed to post): the same commit on other branches is canceled.
      done('canceled', 'the build of this commit ended without a verdict');
      release();
    }
  }

  const track = (set: Set<Promise<void>>, work: Promise<void>) => {
    const done = work.catch((error: unknown) => log(`simulated CI: ${String(error)}`));
    set.add(done);
    void done.finally(() => set.delete(done));
  };

  const listener = (event: PushEvent): void => {
    if (stopping.signal.aborted || !event.ref.startsWith('refs/heads/') || event.after === NULL_SHA) return;
    if (!buildsFor(event.project)) return;
    const key = `${event.project.id}:${event.after}`;
    const b: CiBuild = {
      projectId: event.project.id,
      projectPath: projectPath(event.project),
      branch: event.ref.slice('refs/heads/'.length),
      sha: event.after,
    };
    const forBranch = `${key}:${b.branch}`;
    if (postedFor.has(forBranch)) return;
    if (postedFor.size >= SEEN_LIMIT) postedFor.delete(postedFor.keys().next().value!);
    postedFor.add(forBranch);
    const built = seen.get(key);
    if (built) {
      // A held branch holds whatever is pushed to it: pending, for ever.
      track(
        posting,
        options.hold?.(b) ? post(b, 'pending', 'waiting for a runner of the simulated CI') : relay(b, built),
      );
      return;
    }
    if (seen.size >= SEEN_LIMIT) seen.delete(seen.keys().next().value!);
    let done!: (state: string, description: string) => void;
    seen.set(key, new Promise((resolve) => (done = (state, description) => resolve({ state, description }))));
    runs++;
    if (options.hold?.(b)) {
      track(posting, post(b, 'pending', 'waiting for a runner of the simulated CI'));
      return;
    }
    if (queued >= settings.queueLimit && busy >= settings.parallel) {
      const why = `not built: the simulated CI has ${settings.queueLimit} builds waiting already`;
      done('canceled', why);
      track(posting, post(b, 'canceled', why));
      return;
    }
    queued++;
    track(active, build(b, done));
  };
  // Told of a git push's every ref at once (`pushTaken`), and first of the listeners of any push: it
  // only starts the builds (nothing awaited), and a CI's builds do not wait for the server's own
  // bookkeeping of the push (hooks, merge requests refreshed), which 8.x does in background jobs. A
  // ref told twice is built once (`postedFor`).
  (ctx.on.pushTaken ??= []).push(listener);
  ctx.on.push.unshift(listener);

  return {
    name,
    get runs() {
      return runs;
    },
    get failures() {
      return failures;
    },
    get flakes() {
      return flakes;
    },
    get running() {
      return active.size;
    },
    async verdict(projectId, sha) {
      const project = ctx.db.data.projects.find((p) => p.id === projectId);
      if (!project) throw new Error(`no project ${projectId}`);
      const result = await judge({ projectId, projectPath: projectPath(project), branch: '', sha });
      return result.ok;
    },
    async idle() {
      // Pushes tell the CI after their answer (git-access.ts, afterPush): those still to come first.
      await pushWorkIdle(ctx);
      while (active.size > 0) await Promise.all([...active]);
    },
    async stop() {
      if (stopping.signal.aborted) return;
      stopping.abort();
      for (const list of [ctx.on.push, ctx.on.pushTaken ?? []]) {
        const index = list.indexOf(listener);
        if (index >= 0) list.splice(index, 1);
      }
      for (const next of waiters.splice(0)) next();
      await Promise.all([...active, ...posting]);
      if (workspace) await (await workspace).close();
    },
  };
}
