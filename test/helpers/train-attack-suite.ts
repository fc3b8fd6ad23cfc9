/**
 * What the merge train's red-team files share (test/adversarial/train-*-attacks.test.ts): one sandbox
 * per `describe`, an attack world per test (test/helpers/attack-world.ts: people of each role acting
 * with their own accounts), closed after it, with the train's git wrapped by a spy that records the
 * landings and acts at chosen moments (right before the one push, before a car's build...), and the
 * readings those tests make. `trainAttackSuite` registers its hooks: call it inside the `describe`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { TrainGit } from '../../src/git/train-git.ts';
import type { PushEvent } from '../../src/sandbox/context.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import type { TrainCar } from '../../src/state/store.ts';
import { makeAttackWorld, type AttackWorld } from './attack-world.ts';
import { recordingLandings } from './queue-world.ts';

/** A merge request queued by a developer's comment `/hookbot merge` (depth 2). */
export const QUEUE_ON_COMMAND = `
rules:
  - name: queue on command
    on: [note.created]
    for: merge_requests
    if:
      - note: { matches: '^/hookbot merge\\b' }
      - actor_access: developer
      - state: opened
      - target_branch: master
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, depth: 2 }
`;

export type LandWithCars = Parameters<TrainGit['landWithCars']>[0];

/** What the train git did, and what to do at chosen moments (each hook runs once, then is cleared). */
export interface Spy {
  /** The commits the target was pushed to, by either way of landing, when it went. */
  lands: string[];
  /** Each one push's outcome. */
  together: boolean[];
  /** Landings alone (`land` calls). */
  alone: number;
  /** Right before the next `landWithCars` (with its request). */
  beforeOnePush?: (request: LandWithCars) => Promise<void>;
  /** Right before the next landing push, whichever it is (`land` or `landWithCars`). */
  beforeAnyLanding?: () => Promise<void>;
  /** Replaces the next `landWithCars` (a crash, a lost answer); `real` pushes. */
  onePushOnce?: (request: LandWithCars, real: TrainGit['landWithCars']) => Promise<boolean>;
  /** Right before the next `buildCar` of a car holding `iid`. */
  beforeBuild?: { iid: number; act: () => Promise<void> };
  /** At the next fetch of heads (a run building its next cars: after the front's judging). */
  midRun?: () => Promise<void>;
  /** The server refuses every landing (a push rule an operator set): nothing of it is pushed. */
  refuse?: boolean;
}

export const newSpy = (): Spy => ({ lands: [], together: [], alone: 0 });

function once<K extends 'beforeAnyLanding' | 'beforeOnePush' | 'onePushOnce' | 'midRun'>(
  spy: Spy,
  key: K,
): Spy[K] {
  const hook = spy[key];
  spy[key] = undefined;
  return hook;
}

export function spying(spy: Spy): (base: TrainGit) => TrainGit {
  return (base) => {
    const recording = recordingLandings(base, spy.lands);
    return {
      ...recording,
      async land(request) {
        spy.alone++;
        if (spy.refuse) return { kind: 'refused', message: 'pre-receive hook declined' };
        await once(spy, 'beforeAnyLanding')?.();
        return recording.land(request);
      },
      async landWithCars(request) {
        if (spy.refuse) return false;
        await once(spy, 'beforeAnyLanding')?.();
        await once(spy, 'beforeOnePush')?.(request);
        const instead = once(spy, 'onePushOnce');
        const went = instead
          ? await instead(request, async (r) => {
              const pushed = await base.landWithCars(r);
              if (pushed) spy.lands.push(r.sha);
              return pushed;
            })
          : await recording.landWithCars(request);
        spy.together.push(went);
        return went;
      },
      async buildCar(request) {
        const hook = spy.beforeBuild;
        if (hook && request.members.some((m) => m.iid === hook.iid)) {
          spy.beforeBuild = undefined;
          await hook.act();
        }
        return base.buildCar(request);
      },
      async fetchHeads(request) {
        await once(spy, 'midRun')?.();
        return base.fetchHeads(request);
      },
    };
  };
}

export interface WorldOptions {
  fork?: boolean;
  /** The bot's warnings and errors, as logged. */
  warnings?: string[];
  /** The bot's info lines, as logged (warnings then go to `warnings`, or nowhere). */
  infos?: { fields: object; message: string }[];
}

export interface TrainAttackSuite {
  /** A new attack world (its own group and projects) under `rules`, closed after the test. */
  world(rules: string, spy: Spy, options?: WorldOptions): Promise<AttackWorld>;
  /** The number of the latest world (names made unique with it). */
  count(): number;
  /** The file's work folder (a person's clone goes in it). */
  workDir(): string;
}

/** `name`: short, unique among the test files (the admin token, the projects' and the folder's prefix). */
export function trainAttackSuite(name: string): TrainAttackSuite {
  let sb: Sandbox | undefined;
  let workDir = '';
  let n = 0;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: `${name}-root-token`, hookTimeoutMs: 2_000 });
    workDir = await mkdtemp(path.join(tmpdir(), `hookbot-${name}-`));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(async () => {
    await sb?.close();
    await rm(workDir, { recursive: true, force: true });
  });
  return {
    count: () => n,
    workDir: () => workDir,
    async world(rules, spy, options = {}) {
      n += 1;
      const infos = options.infos;
      const warnings = options.warnings ?? (infos ? [] : undefined);
      const a = await makeAttackWorld(sb!, {
        prefix: `${name}${n}`,
        rules,
        workDir,
        trainGit: spying(spy),
        ...(options.fork ? { fork: true } : {}),
        ...(warnings
          ? {
              log: {
                info: (fields: object, message: string) => void infos?.push({ fields, message }),
                warn: (_fields: object, message: string) => void warnings.push(message),
                error: (_fields: object, message: string) => void warnings.push(message),
              },
            }
          : {}),
      });
      cleanups.push(() => a.w.close());
      return a;
    },
  };
}

/** The cars as the store holds them (each once), front first. */
export function attackCars(a: AttackWorld): TrainCar[] {
  const byId = new Map(
    a.w.store
      .queued()
      .filter((e) => !e.left && e.car)
      .map((e) => [e.car!.id, e.car!] as const),
  );
  return [...byId.values()].sort((x, y) => x.position - y.position);
}

/** Every ref update of the project the server took, in order. */
export function recordPushes(a: AttackWorld): PushEvent[] {
  const seen: PushEvent[] = [];
  a.sb.ctx.on.push.unshift((event) => {
    if (event.project.id === a.w.project.id) seen.push(event);
  });
  return seen;
}

/** The commits each train branch was ever pushed to (deletions left out). */
export function carCommits(pushes: PushEvent[]): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const p of pushes) {
    const branch = p.ref.replace('refs/heads/', '');
    if (!branch.startsWith('hookbot/train/') || /^0+$/.test(p.after)) continue;
    if (!found.has(branch)) found.set(branch, new Set());
    found.get(branch)!.add(p.after);
  }
  return found;
}
