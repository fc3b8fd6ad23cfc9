/**
 * The steps of a case and their seeded generator. A case opens one merge request and one issue,
 * then runs a random interleaving of user actions, delivery faults, API faults, restarts, clock
 * jumps (with the retry sweep) and mid-case quiescence points. Every step is self-contained, so a
 * case still runs with any step (after the two opening ones) dropped: that is how a failure shrinks.
 */
import type { DeliveryMode } from './world.ts';
import { mulberry32, type Rng } from './prng.ts';

export type Label = 'automerge' | 'do-not-merge' | 'bug';
export type CiState = 'pending' | 'success' | 'failed';
export type FaultTarget = 'merge' | 'cancel' | 'note' | 'status' | 'labels';

export type Step =
  /** A branch, a commit, a merge request (with labels), and maybe a first ci/test status, in one burst. */
  | { k: 'open-mr'; labels: Label[]; ci?: CiState; d: DeliveryMode }
  | { k: 'open-issue'; d: DeliveryMode }
  | { k: 'label'; op: 'add' | 'remove'; label: Label; d: DeliveryMode }
  | { k: 'status'; state: CiState; d: DeliveryMode }
  /** A new commit on the source branch. */
  | { k: 'push'; d: DeliveryMode }
  | { k: 'title'; on: 'mr' | 'issue'; d: DeliveryMode }
  /** A real note; `marker`: it carries a copy of a bot comment marker. */
  | {
      k: 'note';
      on: 'mr' | 'issue';
      by: 'maint' | 'alice';
      text: 'triage' | 'plain' | 'marker';
      d: DeliveryMode;
    }
  /**
   * A forged Note Hook sent straight to the bot: `missing`, for a note that does not exist, in the
   * name of maint; `impersonate`, alice's real `/triage` note claimed by maint.
   */
  | { k: 'forge'; on: 'mr' | 'issue'; variant: 'missing' | 'impersonate' }
  /** maint arms merge-when-build-succeeds (only while ci/test is pending on the head: else no-op). */
  | { k: 'arm' }
  | { k: 'fault'; target: FaultTarget; mode: '503' | 'lost'; times: number }
  /**
   * A race, placed exactly: the `skip`+1-th time from now the bot reads the head's statuses (an
   * evaluation reads them, and the fresh check before a merge reads them again), the change lands in the sandbox's data at that instant, silently
   * (no hook: like a delivery lost). `dnm` adds do-not-merge, `unlabel` removes automerge,
   * `ci-failed` makes ci/test failed on the head.
   */
  | { k: 'sneak'; what: 'dnm' | 'unlabel' | 'ci-failed'; skip: number }
  | { k: 'restart' }
  /** Wait until nothing is in flight (hooks, relay, pipeline) and check the hook-level oracle. */
  | { k: 'settle' }
  /** The clock jumps 31 minutes and the retry sweep and the merge watch run. */
  | { k: 'tick' }
  /**
   * Never generated: the oracle's own check. A write made with the bot's token through the proxy,
   * as a broken bot would make it: a merge whatever the state, or a second `thanks` comment.
   */
  | { k: 'rogue'; what: 'merge' | 'comment' };

export interface Case {
  seed: number;
  steps: Step[];
}

const LABELS: readonly Label[] = ['automerge', 'do-not-merge', 'bug'];

function delivery(rng: Rng): DeliveryMode {
  return rng.weighted({ normal: 70, drop: 8, dup: 10, delay: 12 });
}

function randomStep(rng: Rng): Step {
  const kind = rng.weighted({
    label: 22,
    status: 20,
    push: 7,
    title: 6,
    note: 9,
    forge: 4,
    arm: 5,
    fault: 12,
    sneak: 6,
    restart: 3,
    settle: 7,
    tick: 6,
  });
  switch (kind) {
    case 'label':
      return {
        k: 'label',
        op: rng.chance(0.55) ? 'add' : 'remove',
        label: rng.weighted({ automerge: 5, 'do-not-merge': 4, bug: 1 }),
        d: delivery(rng),
      };
    case 'status':
      return { k: 'status', state: rng.weighted({ pending: 3, success: 5, failed: 2 }), d: delivery(rng) };
    case 'push':
      return { k: 'push', d: delivery(rng) };
    case 'title':
      return { k: 'title', on: rng.chance(0.6) ? 'issue' : 'mr', d: delivery(rng) };
    case 'note':
      return {
        k: 'note',
        on: rng.chance(0.5) ? 'mr' : 'issue',
        by: rng.chance(0.5) ? 'maint' : 'alice',
        text: rng.weighted({ triage: 4, plain: 2, marker: 4 }),
        d: delivery(rng),
      };
    case 'forge':
      return {
        k: 'forge',
        on: rng.chance(0.5) ? 'mr' : 'issue',
        variant: rng.chance(0.5) ? 'missing' : 'impersonate',
      };
    case 'arm':
      return { k: 'arm' };
    case 'fault':
      return {
        k: 'fault',
        target: rng.weighted({ merge: 5, cancel: 2, note: 3, status: 2, labels: 2 }),
        mode: rng.chance(0.5) ? '503' : 'lost',
        times: rng.pick([1, 2, 4, 6]),
      };
    case 'sneak':
      return { k: 'sneak', what: rng.pick(['dnm', 'unlabel', 'ci-failed'] as const), skip: rng.int(0, 2) };
    case 'restart':
      return { k: 'restart' };
    case 'settle':
      return { k: 'settle' };
    case 'tick':
      return { k: 'tick' };
  }
}

export function generateCase(seed: number, maxSteps: number): Case {
  const rng = mulberry32(seed);
  const labels = LABELS.filter(() => rng.chance(0.35));
  const opening: Step = {
    k: 'open-mr',
    labels,
    ...(rng.chance(0.5) ? { ci: rng.weighted<CiState>({ pending: 3, success: 2, failed: 1 }) } : {}),
    d: delivery(rng),
  };
  const steps: Step[] = [opening, { k: 'open-issue', d: delivery(rng) }];
  const n = rng.int(Math.min(3, maxSteps), maxSteps);
  for (let i = 0; i < n; i++) steps.push(randomStep(rng));
  return { seed, steps };
}

/** One line per step, for the replay a failure prints. */
export function showStep(step: Step): string {
  const { k, ...rest } = step;
  const args = Object.entries(rest)
    .map(([key, value]) => `${key}=${Array.isArray(value) ? `[${value.join(',')}]` : String(value)}`)
    .join(' ');
  return args ? `${k} ${args}` : k;
}

export function showSteps(steps: readonly Step[]): string {
  return steps.map((step, i) => `  ${String(i + 1).padStart(2)}. ${showStep(step)}`).join('\n');
}
