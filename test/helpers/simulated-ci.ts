/**
 * The simulated CI of the merge queue's tests and benchmarks: the sandbox's own
 * (src/sandbox/ci/simulated-ci.ts) with the check of semantic-check.ts instead of a script, acting as
 * the test's CI user (a developer of the test's group: it builds that group's projects). For every new
 * commit pushed to a project (a file commit, a git push, a merge) it posts `pending` for its status
 * name, then after a short build `success` or `failed` through the API, like an external CI.
 */
import { startSimulatedCi as startSandboxCi } from '../../src/sandbox/ci/simulated-ci.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { semanticCheck } from './semantic-check.ts';

export type CiMode =
  /** pending, then success or failed. */
  | 'normal'
  /** pending, and never anything more: a status that never reports. */
  | 'pending-forever'
  /** pending, then failed whatever the tree: a flaky build (a fault of the build, not of the change). */
  | 'fail';

export interface SimulatedCiOptions {
  /** The status name posted (`ci/test`). */
  name?: string;
  /** The token of the user the CI posts as. */
  token: string;
  /** That user's git credentials (the CI fetches what it builds). */
  git: { username: string; password: string };
  /** How long a build takes, in ms. Default 20. */
  buildMs?: number;
  /** Each build takes up to this much longer again, at random (ms). Default 0. */
  buildJitterMs?: number;
  /** Builds at once. Default 64: the tests' CI never makes a build wait for a runner. */
  parallel?: number;
  /**
   * Per branch (and commit): how its builds behave (default `normal`). Asked once per commit and
   * branch, so a test may answer `fail` to the first build of a branch only (a flake).
   */
  modeOf?: (branch: string, sha: string) => CiMode;
  /**
   * The share of passing builds that post `failed` anyway (0 to 1; default 0), seeded by `seed`
   * (default 1): the sandbox CI's flaky builds (src/sandbox/ci/simulated-ci.ts), deterministic for a
   * given workload. `passes` stays the true check.
   */
  flakeRate?: number;
  seed?: number;
}

export interface SimulatedCi {
  /** Builds started (one per new head). */
  readonly runs: number;
  /** Builds that failed (flaked ones included). */
  readonly failures: number;
  /** Builds that failed only because of `flakeRate`. */
  readonly flakes: number;
  /** Builds not finished yet. */
  readonly running: number;
  /** Whether the tree at `sha` of `projectId` passes the check (false when the commit cannot be had). */
  passes(projectId: number, sha: string): Promise<boolean>;
  /** Resolves when no build is running (those that never finish are not waited for). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export function startSimulatedCi(sb: Sandbox, options: SimulatedCiOptions): SimulatedCi {
  const modes = new Map<string, CiMode>();
  const modeOf = options.modeOf
    ? (build: { branch: string; sha: string }): CiMode => {
        const key = `${build.branch}@${build.sha}`;
        let mode = modes.get(key);
        if (mode === undefined) modes.set(key, (mode = options.modeOf!(build.branch, build.sha)));
        return mode;
      }
    : undefined;
  const ci = startSandboxCi(sb.ctx, {
    name: options.name ?? 'ci/test',
    check: async (files, build) => {
      const extra = Math.random() * (options.buildJitterMs ?? 0);
      if (extra > 0) await new Promise((resolve) => setTimeout(resolve, extra));
      // A build's flake, never the tree's verdict (`passes`, asked without a branch).
      if (build.branch !== '' && modeOf?.(build) === 'fail') return false;
      return semanticCheck(files);
    },
    durationMs: options.buildMs ?? 20,
    parallel: options.parallel ?? 64,
    as: { token: options.token, git: options.git },
    ...(options.flakeRate !== undefined ? { flakeRate: options.flakeRate } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(modeOf ? { hold: (build) => modeOf(build) === 'pending-forever' } : {}),
    // Failed builds are what the tests make on purpose; a status it could not post is worth seeing.
    log: (line) => {
      if (line.includes('could not')) console.error(line);
    },
  });
  return {
    get runs() {
      return ci.runs;
    },
    get failures() {
      return ci.failures;
    },
    get flakes() {
      return ci.flakes;
    },
    get running() {
      return ci.running;
    },
    passes: (projectId, sha) => ci.verdict(projectId, sha).catch(() => false),
    idle: () => ci.idle(),
    stop: () => ci.stop(),
  };
}
