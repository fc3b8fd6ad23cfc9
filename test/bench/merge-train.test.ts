/**
 * The pieces of the merge train benchmark that do not depend on the bot's trains: the workload
 * (bench/train-workload.ts), the broken-commit check and the CI-run count (bench/train-measure.ts),
 * the last two against the sandbox's real git and its simulated CI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ciRunCounter,
  countBroken,
  firstParentLine,
  p50max,
  staleRuns,
  type SeenPush,
} from '../../bench/train-measure.ts';
import {
  goodWorkload,
  idealOutcome,
  idealTrain,
  trainWorkload,
  type TrainWorkload,
} from '../../bench/train-workload.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { INITIAL_FILES } from '../helpers/queue-world.ts';
import { passesCheck } from '../helpers/semantic-check.ts';
import { startSimulatedCi, type SimulatedCi } from '../helpers/simulated-ci.ts';

describe('merge train benchmark: the workload', () => {
  const workload = trainWorkload(20);
  const base = { ...INITIAL_FILES, ...workload.base };
  const alone = (files: Record<string, string>) => passesCheck(Object.values({ ...base, ...files }));

  it('has 20 merge requests on branches of their own, no two writing the same file', () => {
    expect(workload.changes.map((c) => c.position)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(workload.changes.map((c) => c.branch)).size).toBe(20);
    const written = workload.changes.flatMap((c) => Object.keys(c.files));
    expect(new Set(written).size).toBe(written.length);
    expect(passesCheck(Object.values(base))).toBe(true);
  });

  it('every merge request passes alone on the base but the one broken alone', () => {
    const failing = workload.changes.filter((c) => !alone(c.files)).map((c) => c.kind);
    expect(failing).toEqual(['broken alone']);
  });

  it('in queue order, 4 fail only in combination (the second of each pair), spread through the queue, and 1 alone', () => {
    const outcome = idealOutcome(workload, INITIAL_FILES);
    expect(outcome.failed).toEqual([6, 8, 11, 15, 18]);
    expect(outcome.landed).toHaveLength(15);
    const kinds = outcome.failed.map((p) => workload.changes[p - 1]!.kind);
    expect(kinds).toEqual(['call alpha', 'broken alone', 'rename beta', 'call gamma', 'rename delta']);
  });

  it('which one of a pair fails depends on the order: reversed, the other one of each pair fails', () => {
    const reversed: TrainWorkload = { ...workload, changes: [...workload.changes].reverse() };
    const failed = idealOutcome(reversed, INITIAL_FILES).failed.map((p) => workload.changes[p - 1]!.kind);
    expect(failed.sort()).toEqual([
      'broken alone',
      'call beta',
      'call delta',
      'rename alpha',
      'rename gamma',
    ]);
  });

  it('the least a linear train can do on it: rounds (one CI duration each) and CI runs, by depth', () => {
    const { failed } = idealOutcome(workload, INITIAL_FILES);
    expect(idealTrain(failed, 20, 1)).toEqual({ rounds: 20, ciRuns: 20 });
    // depth 5: [1-5] land; [6-10] 6 fails; [7-11] 8 fails; [9-13] 11 fails; [12-16] 15 fails; [16-20] 18 fails; [19-20].
    expect(idealTrain(failed, 20, 5)).toEqual({ rounds: 7, ciRuns: 32 });
    // depth 10: each failure throws away up to nine cars behind it.
    expect(idealTrain(failed, 20, 10)).toEqual({ rounds: 6, ciRuns: 46 });
    expect(idealTrain([], 20, 10)).toEqual({ rounds: 2, ciRuns: 20 });
  });

  it('refuses a size too small to hold its conflicts', () => {
    expect(() => trainWorkload(5)).toThrow(/at least 10/);
  });
});

describe('merge train benchmark: the good workload, stale CI runs, p50 and max', () => {
  it('the good workload: every merge request lands, alone or together', () => {
    const workload = goodWorkload(20, 'flaky');
    expect(workload.changes.map((c) => c.branch)).toContain('flaky-20');
    expect(idealOutcome(workload, INITIAL_FILES)).toEqual({
      landed: Array.from({ length: 20 }, (_, i) => i + 1),
      failed: [],
    });
  });

  it('a stale run is a build first pushed after a source head it merges was replaced; one started before is not', async () => {
    // master M; MR branch `mr-3` at H (then pushed again: H2); cars: A = [M, H] pushed before the
    // push of H2, B = [M, H] again (another commit, a rebuild) after it, C = [M, H2] after it, and D,
    // a car on top of B = [B, X] where X is the head of `mr-4`, never replaced.
    const seen: SeenPush[] = [];
    const push = (ref: string, after: string) =>
      seen.push({ seq: seen.length + 1, at: seen.length, ref: `refs/heads/${ref}`, after });
    push('mr-3', 'M');
    push('mr-3', 'H');
    push('mr-4', 'X');
    const from = seen.length;
    push('hookbot/train/master/default/1', 'A');
    push('mr-3', 'H2');
    push('hookbot/train/master/default/1', 'A'); // the same commit again: still built before the push
    push('hookbot/train/master/default/1', 'B');
    push('hookbot/train/master/default/2', 'D');
    push('hookbot/train/master/default/1', 'C');
    push('hookbot/train/master/default/2', '0000000000000000000000000000000000000000');
    const lines: Record<string, string[][]> = {
      A: [['A', 'M', 'H'], ['M']],
      B: [['B', 'M', 'H'], ['M']],
      C: [['C', 'M', 'H2'], ['M']],
      D: [['D', 'B', 'X'], ['B', 'M', 'H'], ['M']],
      H2: [['H2', 'H'], ['H', 'M'], ['M']],
    };
    const parentsOf = (sha: string) => Promise.resolve(lines[sha]!);
    expect(await staleRuns(seen, new Set(['mr-3', 'mr-4']), from, parentsOf)).toEqual(['B', 'D']);
    // The branch's creation and first commit before `from` replace nothing.
    expect(await staleRuns(seen.slice(0, 4), new Set(['mr-3', 'mr-4']), 3, parentsOf)).toEqual([]);
  });

  it('p50 and max', () => {
    expect(p50max([])).toEqual({ p50: 0, max: 0 });
    expect(p50max([30, 10, 20])).toEqual({ p50: 20, max: 30 });
    expect(p50max([4, 1, 3, 2])).toEqual({ p50: 2, max: 4 });
  });
});

describe('merge train benchmark: the broken-commit check and the CI-run count', { timeout: 60_000 }, () => {
  it('firstParentLine follows first parents only, oldest first', () => {
    const commits = [
      { id: 'm2', parent_ids: ['m1', 'side2'] },
      { id: 'side2', parent_ids: ['side1'] },
      { id: 'm1', parent_ids: ['root', 'side1'] },
      { id: 'side1', parent_ids: ['root'] },
      { id: 'root', parent_ids: [] },
    ];
    expect(firstParentLine(commits, 'm2')).toEqual(['root', 'm1', 'm2']);
  });

  let sb: Sandbox;
  let ci: SimulatedCi;
  let projectId = 0;
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'bench-train-test-root', hookTimeoutMs: 2_000 });
    const ciUser = addUser(sb.ctx.db, {
      username: 'bt-ci',
      private_token: 'bt-ci-token',
      password: 'bt-ci-password',
    });
    const group = addGroup(sb.ctx.db, {
      name: 'bt',
      owner_id: 1,
      members: [{ user_id: ciUser.id, access_level: 30 }],
    });
    projectId = (
      await addProject(sb.ctx, {
        name: 'web',
        namespace_id: group.id,
        creator_id: 1,
        initialFiles: INITIAL_FILES,
      })
    ).id;
    ci = startSimulatedCi(sb, {
      token: 'bt-ci-token',
      git: { username: 'bt-ci', password: 'bt-ci-password' },
    });
  });
  afterAll(async () => {
    await ci?.stop();
    await sb?.close();
  });

  async function commit(branch: string, file: string, content: string, update = false): Promise<string> {
    const res = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/files`, {
      method: update ? 'PUT' : 'POST',
      headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({ file_path: file, branch_name: branch, content, commit_message: file }),
    });
    expect(res.ok).toBe(true);
    return (await sb.ctx.git.branch(projectId, branch))!.id;
  }

  it("counts the target's first-parent commits whose tree fails the CI's check, and the CI runs a stretch used", async () => {
    const runs = ciRunCounter(ci);
    const good = await commit('master', 'caller.txt', 'calls: foo\n');
    const broken = await commit('master', 'lib.txt', 'def bar\n', true);
    const fixed = await commit('master', 'lib2.txt', 'def foo\n');
    // The same commit on another branch is not built again: it is not a run.
    const copy = await fetch(`${sb.apiUrl}/projects/${projectId}/repository/branches`, {
      method: 'POST',
      headers: { 'private-token': sb.adminToken, 'content-type': 'application/json' },
      body: JSON.stringify({ branch_name: 'copy', ref: fixed }),
    });
    expect(copy.status).toBe(201);
    await ci.idle();
    expect(runs()).toBe(3);

    const log = await sb.ctx.git.log(projectId, 'master');
    const line = firstParentLine(log, log[0]!.id);
    expect(line.slice(-3)).toEqual([good, broken, fixed]);
    const { broken: count, firstBroken } = await countBroken(line, (sha) => ci.passes(projectId, sha));
    expect({ count, firstBroken }).toEqual({ count: 1, firstBroken: broken });
  });
});
