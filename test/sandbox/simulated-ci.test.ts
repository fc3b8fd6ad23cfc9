/**
 * The sandbox's simulated CI (src/sandbox/ci/): every commit pushed to a branch gets `pending`, then
 * `success` or `failed` from a script run in a checkout of it, posted through the API by its own user;
 * bounded (builds at once, builds waiting), cleaned up, one build per commit, a minimal environment
 * for the script.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flakeDraw, startSimulatedCi, type SimulatedCi } from '../../src/sandbox/ci/simulated-ci.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { DEVELOPER } from '../../src/sandbox/permissions.ts';
import { startSandbox, type SandboxOptions } from '../../src/sandbox/server.ts';
import { caller } from '../helpers/sandbox.ts';
import { gitUser } from '../helpers/git-user.ts';
import { waitFor } from '../helpers/wait-for.ts';

interface Status {
  status: string;
  name: string;
  description: string | null;
  ref: string;
  author: { username: string };
}

describe('the sandbox simulated CI', { timeout: 60_000 }, () => {
  let work = '';
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'hookbot-ci-test-'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** A sandbox running the CI with `ci`, a project with a README, and its statuses read as root. */
  async function world(ci: SandboxOptions['ci']) {
    const sb = await startSandbox({
      adminToken: 'ci-root-token',
      hookTimeoutMs: 2_000,
      ...(ci ? { ci } : {}),
    });
    const call = caller(sb, sb.adminToken);
    const owner = addUser(sb.ctx.db, { username: 'owner', password: 'owner-password' });
    const project = await addProject(sb.ctx, {
      name: 'built',
      namespace_id: ensureUserNamespace(sb.ctx.db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'hello\n' },
    });
    const statuses = async (sha: string): Promise<Status[]> =>
      (
        await call('GET', `/projects/${project.id}/repository/commits/${sha}/statuses`, {
          query: { all: true },
        })
      ).body as Status[];
    const commit = async (branch: string, file: string, content: string) => {
      if (!(await sb.ctx.git.branch(project.id, branch)))
        await call('POST', `/projects/${project.id}/repository/branches`, {
          body: { branch_name: branch, ref: 'master' },
        });
      const res = await call('POST', `/projects/${project.id}/repository/files`, {
        body: { file_path: file, branch_name: branch, content, commit_message: `Add ${file}` },
      });
      expect(res.status).toBe(201);
      return (await sb.ctx.git.branch(project.id, branch))!.id;
    };
    return { sb, call, project, owner, statuses, commit };
  }

  it('posts pending, then success or failed from the script run in a checkout of the commit, as sandbox-ci', async () => {
    const w = await world({ script: 'test -f ok.txt', durationMs: 50 });
    try {
      const good = await w.commit('master', 'ok.txt', 'yes\n');
      await w.sb.ci!.idle();
      const ok = await w.statuses(good);
      expect(ok.map((s) => s.status)).toEqual(['success']);
      expect(ok[0]).toMatchObject({ name: 'ci/sandbox', ref: 'master', author: { username: 'sandbox-ci' } });

      const bad = await w.commit('master', 'other.txt', 'x\n');
      await w.call('DELETE', `/projects/${w.project.id}/repository/files`, {
        body: { file_path: 'ok.txt', branch_name: 'master', commit_message: 'Remove ok' },
      });
      await w.sb.ci!.idle();
      const head = (await w.sb.ctx.git.branch(w.project.id, 'master'))!.id;
      expect((await w.statuses(bad)).map((s) => s.status)).toEqual(['success']);
      expect(await w.statuses(head)).toEqual([
        expect.objectContaining({ status: 'failed', description: 'exit code 1' }),
      ]);
      // The user it posts as: its own administrator, made at start.
      const user = w.sb.ctx.db.data.users.find((u) => u.username === 'sandbox-ci');
      expect(user).toMatchObject({ is_admin: true, state: 'active' });
      expect(w.sb.ci!.runs).toBe(3);
      expect(w.sb.ci!.failures).toBe(1);
    } finally {
      await w.sb.close();
    }
  });

  it('builds a git push fetched over HTTP, shows pending while it builds, and builds a commit once', async () => {
    const w = await world({ script: 'grep -q yes flag.txt', durationMs: 400 });
    try {
      const dev = addUser(w.sb.ctx.db, { username: 'dev', password: 'dev-password' });
      w.sb.ctx.db.data.members.push({
        project_id: w.project.id,
        user_id: dev.id,
        access_level: DEVELOPER,
        created_at: w.sb.ctx.db.now(),
      });
      const g = await gitUser(
        work,
        { username: 'dev', password: 'dev-password' },
        `${w.sb.url}/${w.owner.username}/${w.project.path}.git`,
      );
      // Every status change, as the sandbox records it (a pending status becomes success in place).
      const seen: string[] = [];
      w.sb.ctx.on.status.push((event) => {
        const latest = w.sb.ctx.db.data.statuses.filter((st) => st.sha === event.sha).at(-1);
        if (latest) seen.push(`${event.sha}:${latest.status}`);
      });
      await g.git('checkout', '--quiet', '-b', 'topic');
      const sha = await g.commit('flag.txt', 'yes\n');
      await g.git('push', '--quiet', 'origin', 'HEAD:refs/heads/topic');
      await w.sb.ci!.idle();
      expect(seen).toEqual([`${sha}:pending`, `${sha}:success`]);
      expect((await w.statuses(sha)).map((s) => s.status)).toEqual(['success']);
      const runs = w.sb.ci!.runs;
      // The same commit on another branch (as a train lands by fast-forward): not built again; its
      // verdict is posted for that branch too (a CI of that era builds each ref).
      await g.git('push', '--quiet', 'origin', 'HEAD:refs/heads/master');
      await w.sb.ci!.idle();
      expect(w.sb.ci!.runs).toBe(runs);
      expect((await w.statuses(sha)).map((s) => [s.ref, s.status])).toEqual([
        ['topic', 'success'],
        ['master', 'success'],
      ]);
      // And once only per branch.
      await g.git('push', '--quiet', 'origin', 'HEAD:refs/heads/other');
      await g.git('push', '--quiet', 'origin', 'HEAD:refs/heads/other', '--force');
      await w.sb.ci!.idle();
      expect(w.sb.ci!.runs).toBe(runs);
      expect((await w.statuses(sha)).map((s) => s.ref)).toEqual(['topic', 'master', 'other']);
    } finally {
      await w.sb.close();
    }
  });

  it("gives the script the commit's files and a minimal environment: no .git, no credentials, nothing of the sandbox's", async () => {
    process.env.HOOKBOT_CI_TEST_SECRET = 'must-not-leak';
    // The checks each fail with their own exit code, so a failure says which.
    const script = [
      'test "$(cat marker.txt)" = here || exit 11',
      'test ! -e .git || exit 12',
      'test -z "${HOOKBOT_CI_TEST_SECRET:-}" || exit 13',
      'test "$CI" = true || exit 14',
      'test "$CI_BUILD_REF_NAME" = master || exit 15',
      'test -n "$CI_BUILD_REF" && test "$(git rev-parse HEAD 2>/dev/null)" = "" || exit 16',
      'test "$CI_PROJECT_PATH" = owner/built || exit 17',
      'env | grep -qi token && exit 18',
      'exit 0',
    ].join('\n');
    const w = await world({ script, durationMs: 0 });
    try {
      const sha = await w.commit('master', 'marker.txt', 'here\n');
      await w.sb.ci!.idle();
      expect(await w.statuses(sha)).toEqual([expect.objectContaining({ status: 'success' })]);
    } finally {
      delete process.env.HOOKBOT_CI_TEST_SECRET;
      await w.sb.close();
    }
  });

  it('runs at most `parallel` builds at once, queues the rest, cancels past the queue limit, and cleans its folders', async () => {
    const w = await world(undefined);
    const ciDir = await mkdtemp(path.join(work, 'ci-'));
    let current = 0;
    let most = 0;
    const gate: (() => void)[] = [];
    const ci: SimulatedCi = startSimulatedCi(w.sb.ctx, {
      check: async () => {
        current++;
        most = Math.max(most, current);
        await new Promise<void>((resolve) => gate.push(resolve));
        current--;
        return true;
      },
      durationMs: 0,
      parallel: 2,
      queueLimit: 3,
      workDir: ciDir,
    });
    try {
      const shas: string[] = [];
      for (let i = 0; i < 5; i++) shas.push(await w.commit(`b${i}`, `f${i}.txt`, `${i}\n`));
      // Two builds in their check, and every commit's first status posted (they are posted apart).
      await waitFor(
        async () => {
          if (current !== 2) return undefined;
          for (const sha of shas) if ((await w.statuses(sha)).length === 0) return undefined;
          return true;
        },
        20_000,
        'two builds running and every status posted',
      );
      // The first new branch built master's commit too: six builds. Two run (that one and the first
      // commit), three wait (pending), the last was past the limit.
      const states = await Promise.all(shas.map(async (sha) => (await w.statuses(sha)).map((s) => s.status)));
      expect(states).toEqual([['pending'], ['pending'], ['pending'], ['pending'], ['canceled']]);
      expect((await w.statuses(shas[4]!))[0]!.description).toContain('3 builds waiting');
      // Let them all go: never more than two at once. (Counted by builds, not statuses: the first
      // commit's verdict is posted for each branch made from it as well.)
      while (ci.running > 0) {
        gate.splice(0).forEach((open) => open());
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await ci.idle();
      expect(most).toBe(2);
      // Build folders are gone once done; everything once stopped.
      const [inside] = await readdir(ciDir);
      expect((await readdir(path.join(ciDir, inside!))).filter((f) => f.startsWith('build-'))).toEqual([]);
      await ci.stop();
      expect(await readdir(ciDir)).toEqual([]);
    } finally {
      gate.splice(0).forEach((open) => open());
      await ci.stop();
      await w.sb.close();
    }
  });

  it('a script past its time limit is killed and its build fails; held builds stay pending; a project its user cannot post on is not built', async () => {
    const w = await world(undefined);
    const stranger = addUser(w.sb.ctx.db, { username: 'ci-stranger', password: 'stranger-password' });
    const own = await addProject(w.sb.ctx, {
      name: 'own',
      namespace_id: ensureUserNamespace(w.sb.ctx.db, stranger).id,
      creator_id: stranger.id,
      initialFiles: { 'README.md': 'own\n' },
    });
    const ci = startSimulatedCi(w.sb.ctx, {
      script: 'if test -f slow.txt; then sleep 30; fi',
      durationMs: 0,
      timeoutMs: 300,
      hold: (build) => build.branch === 'held',
      as: { token: stranger.private_token, git: { username: 'ci-stranger', password: 'stranger-password' } },
    });
    try {
      const slow = await (async () => {
        const res = await w.call('POST', `/projects/${own.id}/repository/files`, {
          body: { file_path: 'slow.txt', branch_name: 'master', content: 's\n', commit_message: 'slow' },
        });
        expect(res.status).toBe(201);
        return (await w.sb.ctx.git.branch(own.id, 'master'))!.id;
      })();
      await w.call('POST', `/projects/${own.id}/repository/branches`, {
        body: { branch_name: 'held', ref: 'master' },
      });
      const res = await w.call('POST', `/projects/${own.id}/repository/files`, {
        body: { file_path: 'h.txt', branch_name: 'held', content: 'h\n', commit_message: 'held' },
      });
      expect(res.status).toBe(201);
      const held = (await w.sb.ctx.git.branch(own.id, 'held'))!.id;
      // The first project is not the stranger's: nothing is built there.
      const elsewhere = await w.commit('master', 'x.txt', 'x\n');
      const started = Date.now();
      await ci.idle();
      expect(Date.now() - started).toBeLessThan(25_000);
      const read = async (sha: string, ref = 'master') =>
        (
          (await w.call('GET', `/projects/${own.id}/repository/commits/${sha}/statuses?ref_name=${ref}`))
            .body as Status[]
        ).map((s) => [s.status, s.description]);
      expect(await read(slow)).toEqual([['failed', 'timed out after 0.3 s']]);
      // The same commit on the held branch (made from master) is held too.
      expect((await read(slow, 'held')).map(([state]) => state)).toEqual(['pending']);
      expect((await read(held, 'held')).map(([state]) => state)).toEqual(['pending']);
      expect(await w.statuses(elsewhere)).toEqual([]);
    } finally {
      await ci.stop();
      await w.sb.close();
    }
  });

  it('a flaky CI (`flakeRate`) fails passing builds as `flaked`, and only those; `verdict` stays the true check', async () => {
    const w = await world({ script: 'test ! -f bad.txt', durationMs: 0, flakeRate: 1 });
    try {
      const good = await w.commit('master', 'ok.txt', 'yes\n');
      await w.sb.ci!.idle();
      const bad = await w.commit('master', 'bad.txt', 'x\n');
      await w.sb.ci!.idle();
      expect((await w.statuses(good)).map((s) => [s.status, s.description])).toEqual([['failed', 'flaked']]);
      expect((await w.statuses(bad)).map((s) => [s.status, s.description])).toEqual([
        ['failed', 'exit code 1'],
      ]);
      expect(w.sb.ci!.flakes).toBe(1);
      expect(w.sb.ci!.failures).toBe(2);
      expect(await w.sb.ci!.verdict(w.project.id, good)).toBe(true);
      expect(await w.sb.ci!.verdict(w.project.id, bad)).toBe(false);
    } finally {
      await w.sb.close();
    }
    expect(() => startSimulatedCi(w.sb.ctx, { script: 'true', flakeRate: 1.5 })).toThrow(/between 0 and 1/);
  });

  it('its flakes are seeded and keyed by tree and attempt: the same commits draw the same in another sandbox; the same tree again draws again', async () => {
    const outcomes = async (seed: number) => {
      const w = await world({ script: 'true', durationMs: 0, flakeRate: 0.5, seed });
      try {
        const states: string[] = [];
        for (let i = 0; i < 12; i++) {
          const sha = await w.commit(`b${i}`, `f${i}.txt`, `${i}\n`);
          await w.sb.ci!.idle();
          states.push((await w.statuses(sha))[0]!.status);
        }
        return { states, flakes: w.sb.ci!.flakes, runs: w.sb.ci!.runs };
      } finally {
        await w.sb.close();
      }
    };
    const first = await outcomes(7);
    // Commit dates differ (so do the shas), the trees do not: the same draws.
    expect(await outcomes(7)).toEqual(first);
    // Every build passes the script: each failure is a flake (the branches' first commit, master's, is built too).
    const failed = first.states.filter((s) => s === 'failed').length;
    expect(first.runs).toBe(13);
    expect(first.flakes - failed).toBeLessThanOrEqual(1);
    expect(failed).toBeGreaterThan(0);
    expect(failed).toBeLessThan(12);
    // A tree built again (another commit, same files) is a new attempt with a draw of its own.
    expect(flakeDraw(7, 'tree:0')).toBe(flakeDraw(7, 'tree:0'));
    expect(flakeDraw(7, 'tree:0')).not.toBe(flakeDraw(7, 'tree:1'));
    expect(flakeDraw(7, 'tree:0')).not.toBe(flakeDraw(8, 'tree:0'));
    const draws = Array.from({ length: 10_000 }, (_, i) => flakeDraw(3, `t${i}:0`));
    const share = draws.filter((d) => d < 0.1).length / draws.length;
    expect(share).toBeGreaterThan(0.08);
    expect(share).toBeLessThan(0.12);
  });

  it('refuses to start over a user named sandbox-ci that is not an administrator', async () => {
    const file = path.join(work, 'taken.json');
    const first = await startSandbox({ dataFile: file });
    addUser(first.ctx.db, { username: 'sandbox-ci' });
    await first.close();
    await expect(startSandbox({ dataFile: file, ci: { script: 'true' } })).rejects.toThrow(
      /a user named sandbox-ci exists and is not an administrator/,
    );
  });
});
