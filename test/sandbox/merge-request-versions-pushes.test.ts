/**
 * When the sandbox makes a merge request version, and the system notes a push leaves, as the last 8.x
 * releases do (docs/server-behaviour.md#merge-request-versions,
 * docs/server-behaviour.md#system-notes-of-a-push): on create, at every push to the source branch
 * while it is open (a reset to an older commit and a force push too, the branch deleted and made
 * again), on reopen, when the target branch changes, at a force push to the target branch or one that
 * brings some of its commits; and from a fork. Pushes go over git (HTTP) and through the API.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushWorkIdle } from '../../src/sandbox/git-access.ts';
import { gitUser, type GitUser } from '../helpers/git-user.ts';
import { makeWorld, type Member } from '../helpers/issuable-world.ts';
import { useSandbox } from '../helpers/sandbox.ts';

interface Version {
  id: number;
  head_commit_sha: string | null;
  base_commit_sha: string | null;
  start_commit_sha: string | null;
  created_at: string;
  merge_request_id: number;
  state: string;
  real_size: string | null;
}

// Each test runs real git processes: allow for a slow, busy machine.
describe('sandbox: merge request versions and the notes of a push', { timeout: 60_000 }, () => {
  const sandbox = useSandbox();
  let home = '';
  beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'hookbot-versions-test-'));
  });
  afterAll(async () => {
    await rm(home, { recursive: true, force: true });
  });

  let n = 0;
  async function world(visibility_level: 0 | 20 = 0) {
    n += 1;
    const { sb, call } = sandbox();
    const w = await makeWorld(sb, call, `ver${n}`, {
      visibility_level,
      initialFiles: { 'README.md': 'one\ntwo\nthree\n' },
    });
    const api = (id = w.project.id) => `/projects/${id}`;
    /** `who`'s clone of the project (`id`); each push waits for its consequences (they follow its answer). */
    const clone = async (who: Member, project = w.project): Promise<GitUser> => {
      const ns = sb.ctx.db.data.namespaces.find((x) => x.id === project.namespace_id)!;
      const g = await gitUser(
        home,
        { username: who.user.username, password: who.user.password },
        `${sb.url}/${ns.path}/${project.path}.git`,
      );
      return {
        ...g,
        async git(...args: string[]) {
          const out = await g.git(...args);
          if (args[0] === 'push') await pushWorkIdle(sb.ctx);
          return out;
        },
      };
    };
    /** A commit on `branch` through the files API (a push whose consequences come before the answer). */
    const commit = async (
      branch: string,
      file: string,
      message: string,
      who = w.developer,
      id = w.project.id,
    ) => {
      const res = await who.as('POST', `${api(id)}/repository/files`, {
        body: { file_path: file, branch_name: branch, content: `${file}\n`, commit_message: message },
      });
      expect(res.status).toBe(201);
      return (await sb.ctx.git.branch(id, branch))!;
    };
    const branch = async (name: string, ref: string, who = w.developer, id = w.project.id) => {
      const res = await who.as('POST', `${api(id)}/repository/branches`, {
        body: { branch_name: name, ref },
      });
      expect(res.status).toBe(201);
    };
    const removeBranch = async (name: string, who = w.developer, id = w.project.id) => {
      const res = await who.as('DELETE', `${api(id)}/repository/branches/${encodeURIComponent(name)}`);
      expect(res.status).toBe(200);
    };
    const open = async (
      source: string,
      who = w.developer,
      extra: Record<string, unknown> = {},
      id = w.project.id,
    ) => {
      const res = await who.as('POST', `${api(id)}/merge_requests`, {
        body: { source_branch: source, target_branch: 'master', title: `Merge ${source}`, ...extra },
      });
      expect(res.status).toBe(200);
      return res.body as { id: number };
    };
    const versions = async (mrId: number, who: Member = w.reporter): Promise<Version[]> => {
      const res = await who.as('GET', `${api()}/merge_requests/${mrId}/versions`);
      expect(res.status).toBe(200);
      return res.body;
    };
    const heads = async (mrId: number) => (await versions(mrId)).map((v) => v.head_commit_sha);
    const systemNotes = async (mrId: number): Promise<string[]> => {
      const res = await w.owner.as('GET', `${api()}/merge_requests/${mrId}/notes`, {
        query: { per_page: 100 },
      });
      return (res.body as { system: boolean; body: string; id: number }[])
        .filter((note) => note.system)
        .sort((a, b) => a.id - b.id)
        .map((note) => note.body);
    };
    const head = async (name: string, id = w.project.id) => (await sb.ctx.git.branch(id, name))!.id;
    return { w, sb, api, clone, commit, branch, removeBranch, open, versions, heads, systemNotes, head };
  }

  it('on create: one version, the branches as they are, its commits and diff', async () => {
    const t = await world();
    await t.branch('create', 'master');
    const added = await t.commit('create', 'a.txt', 'Add a');
    const master = await t.head('master');
    const mr = await t.open('create');
    const [v, ...older] = await t.versions(mr.id);
    expect(older).toEqual([]);
    expect(v).toEqual({
      id: expect.any(Number),
      head_commit_sha: added.id,
      base_commit_sha: master,
      start_commit_sha: master,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      merge_request_id: mr.id,
      state: 'collected',
      real_size: '1',
    });
    const one = await t.w.reporter.as('GET', `${t.api()}/merge_requests/${mr.id}/versions/${v!.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ ...v, commits: [{ id: added.id, title: 'Add a' }] });
    expect(Object.keys(one.body.commits[0]).sort()).toEqual(
      ['author_email', 'author_name', 'created_at', 'id', 'message', 'short_id', 'title'].sort(),
    );
    expect(one.body.diffs).toEqual([expect.objectContaining({ new_path: 'a.txt', new_file: true })]);
  });

  it('at every push to the source branch, newest first; `Added N commits:` notes what each brought, oldest first', async () => {
    const t = await world();
    await t.branch('pushes', 'master');
    const first = await t.commit('pushes', 'a.txt', 'Add a');
    const mr = await t.open('pushes');
    const second = await t.commit('pushes', 'b.txt', 'Add <b> & "c"');
    const dev = await t.clone(t.w.developer);
    await dev.git('fetch', '--quiet', 'origin');
    await dev.git('checkout', '--quiet', '-B', 'pushes', 'origin/pushes');
    const third = await dev.commit('c.txt', 'c\n', 'Add c');
    const fourth = await dev.commit('d.txt', 'd\n', 'Add d');
    await dev.git('push', '--quiet', 'origin', 'HEAD:refs/heads/pushes');
    expect(await t.heads(mr.id)).toEqual([fourth, second.id, first.id]);
    const [latest] = await t.versions(mr.id);
    expect(latest).toMatchObject({ state: 'collected', real_size: '4' });
    const short = (sha: string) => sha.slice(0, 11);
    expect(await t.systemNotes(mr.id)).toEqual([
      `Added 1 commit:\n\n* ${second.short_id} - Add &lt;b&gt; &amp; &quot;c&quot;`,
      `Added 2 commits:\n\n* ${short(third)} - Add c\n* ${short(fourth)} - Add d`,
    ]);
  });

  it('a reset to an older commit makes a version and writes no note; a force push to a new commit notes it', async () => {
    const t = await world();
    await t.branch('reset', 'master');
    const older = await t.commit('reset', 'a.txt', 'Add a');
    const mr = await t.open('reset');
    const reviewed = await t.commit('reset', 'b.txt', 'Add b');
    const notesBefore = await t.systemNotes(mr.id);
    expect(notesBefore).toEqual([`Added 1 commit:\n\n* ${reviewed.short_id} - Add b`]);
    const dev = await t.clone(t.w.developer);
    await dev.git('push', '--quiet', '--force', 'origin', `${older.id}:refs/heads/reset`);
    expect(await t.heads(mr.id)).toEqual([older.id, reviewed.id, older.id]);
    // Last 8.x: `comment_mr_with_commits` returns when the push brought no commit.
    expect(await t.systemNotes(mr.id)).toEqual(notesBefore);

    await dev.git('fetch', '--quiet', 'origin');
    await dev.git('checkout', '--quiet', '-B', 'reset', `${older.id}`);
    const amended = await dev.commit('b.txt', 'b, amended\n', 'Add b, amended');
    await dev.git('push', '--quiet', '--force', 'origin', 'HEAD:refs/heads/reset');
    expect((await t.heads(mr.id))[0]).toBe(amended);
    expect((await t.systemNotes(mr.id)).at(-1)).toBe(
      `Added 1 commit:\n\n* ${amended.slice(0, 11)} - Add b, amended`,
    );
  });

  it('the branch deleted and made again: a version without a head between, `Deleted`/`Restored source branch` (lower case, as 8.x capitalises), no `Added` note', async () => {
    const t = await world();
    await t.branch('Fix/Again', 'master');
    const reviewed = await t.commit('Fix/Again', 'a.txt', 'Add a');
    const mr = await t.open('Fix/Again');
    await t.branch('side', 'Fix/Again');
    const unreviewed = await t.commit('side', 'planted.txt', 'Plant');
    await t.removeBranch('Fix/Again');
    const [gone] = await t.versions(mr.id);
    expect(gone).toMatchObject({
      head_commit_sha: null,
      base_commit_sha: null,
      start_commit_sha: await t.head('master'),
      state: 'empty',
      real_size: null,
    });
    const noHead = await t.w.reporter.as('GET', `${t.api()}/merge_requests/${mr.id}/versions/${gone!.id}`);
    expect(noHead.body).toMatchObject({ commits: [], diffs: [] });
    await t.branch('Fix/Again', unreviewed.id);
    expect(await t.heads(mr.id)).toEqual([unreviewed.id, null, reviewed.id]);
    expect(await t.systemNotes(mr.id)).toEqual([
      'Deleted source branch `fix/again`',
      'Restored source branch `fix/again`',
    ]);
  });

  it('a closed merge request gets none until it is reopened; then one, at the head its branch has', async () => {
    const t = await world();
    await t.branch('closed', 'master');
    const first = await t.commit('closed', 'a.txt', 'Add a');
    const mr = await t.open('closed');
    expect(
      (
        await t.w.developer.as('PUT', `${t.api()}/merge_requests/${mr.id}`, {
          body: { state_event: 'close' },
        })
      ).status,
    ).toBe(200);
    const whileClosed = await t.commit('closed', 'b.txt', 'Add b');
    expect(await t.heads(mr.id)).toEqual([first.id]);
    expect(await t.systemNotes(mr.id)).toEqual(['Status changed to closed']);
    await t.w.developer.as('PUT', `${t.api()}/merge_requests/${mr.id}`, { body: { state_event: 'reopen' } });
    expect(await t.heads(mr.id)).toEqual([whileClosed.id, first.id]);
  });

  it('when the target branch changes: a version whose start is the new target', async () => {
    const t = await world();
    await t.branch('stable', 'master');
    const stable = await t.commit('stable', 'stable.txt', 'Stable');
    await t.branch('retarget', 'master');
    await t.commit('retarget', 'a.txt', 'Add a');
    const mr = await t.open('retarget');
    await t.w.developer.as('PUT', `${t.api()}/merge_requests/${mr.id}`, {
      body: { target_branch: 'stable' },
    });
    const [now, before] = await t.versions(mr.id);
    expect(now!.start_commit_sha).toBe(stable.id);
    expect(before!.start_commit_sha).toBe(await t.head('master'));
  });

  it('at a push to the target branch only when it is a force push or brings some of its commits', async () => {
    const t = await world();
    await t.branch('trunk', 'master');
    await t.branch('two', 'master');
    const a = await t.commit('two', 'a.txt', 'Add a');
    await t.commit('two', 'b.txt', 'Add b');
    const mr = await t.open('two', t.w.developer, { target_branch: 'trunk' });
    const trunkBefore = await t.head('trunk');
    // Another commit on the target: not one of the merge request's.
    await t.commit('trunk', 'other.txt', 'Other', t.w.master);
    expect(await t.versions(mr.id)).toHaveLength(1);
    // Its first commit merged into the target (not its head: it stays open).
    const master = await t.clone(t.w.master);
    await master.git('fetch', '--quiet', 'origin');
    await master.git('checkout', '--quiet', '-B', 'trunk', 'origin/trunk');
    await master.git('merge', '--quiet', '--no-ff', '-m', 'Take a', a.id);
    await master.git('push', '--quiet', 'origin', 'HEAD:refs/heads/trunk');
    expect(await t.versions(mr.id)).toHaveLength(2);
    // The target forced back: a force push.
    await master.git('push', '--quiet', '--force', 'origin', `${trunkBefore}:refs/heads/trunk`);
    const all = await t.versions(mr.id);
    expect(all).toHaveLength(3);
    expect(all[0]!.start_commit_sha).toBe(trunkBefore);
    // Target pushes write no note on it.
    expect(await t.systemNotes(mr.id)).toEqual([]);
  });

  it('from a fork: the fork owner pushes, resets, deletes and makes her branch again; the versions and notes are on the upstream merge request', async () => {
    const t = await world(20);
    const { sb } = t;
    const owner = t.w.outsider;
    const forked = await owner.as('POST', `/projects/fork/${t.w.project.id}`);
    expect(forked.status).toBe(201);
    const fork = sb.ctx.db.data.projects.find((p) => p.id === forked.body.id)!;
    await t.branch('feat', 'master', owner, fork.id);
    const first = await t.commit('feat', 'a.txt', 'Add a', owner, fork.id);
    const mr = await t.open('feat', owner, { target_project_id: t.w.project.id }, fork.id);
    const second = await t.commit('feat', 'b.txt', 'Add b', owner, fork.id);
    const mine = await t.clone(owner, fork);
    await mine.git('push', '--quiet', '--force', 'origin', `${first.id}:refs/heads/feat`);
    await t.removeBranch('feat', owner, fork.id);
    await t.branch('feat', second.id, owner, fork.id);
    expect(await t.heads(mr.id)).toEqual([second.id, null, first.id, second.id, first.id]);
    expect(await t.systemNotes(mr.id)).toEqual([
      `Added 1 commit:\n\n* ${second.short_id} - Add b`,
      'Deleted source branch `feat`',
      'Restored source branch `feat`',
    ]);
    // A reporter of the target reads every version's commits, the fork's, without access to the fork.
    for (const v of await t.versions(mr.id)) {
      const one = await t.w.reporter.as('GET', `${t.api()}/merge_requests/${mr.id}/versions/${v.id}`);
      expect(one.status).toBe(200);
      expect(one.body.commits.map((c: { id: string }) => c.id)[0]).toBe(v.head_commit_sha ?? undefined);
    }
  });

  it("the target's own commits a push brings are summed up on one line, the merge request's listed", async () => {
    const t = await world();
    await t.branch('sync', 'master');
    await t.commit('sync', 'a.txt', 'Add a');
    const mr = await t.open('sync');
    const before = await t.head('sync');
    await t.commit('master', 'm1.txt', 'Master one', t.w.master);
    const m2 = await t.commit('master', 'm2.txt', 'Master two', t.w.master);
    const dev = await t.clone(t.w.developer);
    await dev.git('fetch', '--quiet', 'origin');
    await dev.git('checkout', '--quiet', '-B', 'sync', 'origin/sync');
    await dev.git('merge', '--quiet', '--no-ff', '-m', 'Sync with master', 'origin/master');
    await dev.git('push', '--quiet', 'origin', 'HEAD:refs/heads/sync');
    const merge = await t.head('sync');
    expect(await t.systemNotes(mr.id)).toEqual([
      `Added 3 commits:\n\n* ${before.slice(0, 8)}...${m2.short_id} - 2 commits from branch \`master\`\n* ${merge.slice(0, 11)} - Sync with master`,
    ]);
  });

  it("from a fork, the target's commits are named with the target's namespace", async () => {
    const t = await world(20);
    const owner = t.w.outsider;
    const forked = await owner.as('POST', `/projects/fork/${t.w.project.id}`);
    const fork = t.sb.ctx.db.data.projects.find((p) => p.id === forked.body.id)!;
    await t.branch('feat', 'master', owner, fork.id);
    await t.commit('feat', 'a.txt', 'Add a', owner, fork.id);
    const mr = await t.open('feat', owner, { target_project_id: t.w.project.id }, fork.id);
    const upstream = await t.commit('master', 'up.txt', 'Upstream', t.w.master);
    const mine = await t.clone(owner, fork);
    const ns = t.sb.ctx.db.data.namespaces.find((x) => x.id === t.w.project.namespace_id)!;
    await mine.git('fetch', '--quiet', `${t.sb.url}/${ns.path}/${t.w.project.path}.git`, 'master');
    await mine.git('checkout', '--quiet', '-B', 'feat', 'origin/feat');
    await mine.git('merge', '--quiet', '--no-ff', '-m', 'Sync', 'FETCH_HEAD');
    await mine.git('push', '--quiet', 'origin', 'HEAD:refs/heads/feat');
    const merge = await t.head('feat', fork.id);
    expect(await t.systemNotes(mr.id)).toEqual([
      `Added 2 commits:\n\n* ${upstream.short_id} - 1 commit from branch \`${ns.path}:master\`\n* ${merge.slice(0, 11)} - Sync`,
    ]);
  });

  it('what a branch made again brings past the version head before it is noted (8.x `find_new_commits`)', async () => {
    // A version made at start for a merge request the sandbox did not see being made (here: its
    // first version taken away) has a head; a branch made again past it notes the commits between.
    const t = await world();
    await t.branch('again', 'master');
    const reviewed = await t.commit('again', 'a.txt', 'Add a');
    const mr = await t.open('again');
    await t.branch('next', 'again');
    const later = await t.commit('next', 'b.txt', 'Add b');
    const db = t.sb.ctx.db;
    // The deletion's version dropped, as if the branch had gone while nothing was recorded.
    await t.removeBranch('again');
    db.data.mergeRequestDiffs = db.data.mergeRequestDiffs.filter(
      (v) => !(v.merge_request_id === mr.id && v.head_commit_sha === null),
    );
    await t.branch('again', later.id);
    expect(await t.heads(mr.id)).toEqual([later.id, reviewed.id]);
    expect((await t.systemNotes(mr.id)).slice(-2)).toEqual([
      'Restored source branch `again`',
      `Added 1 commit:\n\n* ${later.short_id} - Add b`,
    ]);
  });
});
