import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitCommit, SandboxContext } from '../../src/sandbox/context.ts';
import {
  createDb,
  emptyData,
  type IssueRec,
  type MergeRequestRec,
  type NoteRec,
  type ProjectRec,
  type StatusRec,
  type UserRec,
} from '../../src/sandbox/db.ts';
import { addGroup, addProject, addUser } from '../../src/sandbox/factories.ts';
import { createGitRepos } from '../../src/sandbox/git.ts';
import { createHookDispatcher } from '../../src/sandbox/hook-dispatcher.ts';
import {
  BLANK_SHA,
  combinedStatus,
  issuePayload,
  loadCommit,
  mergeRequestPayload,
  notePayload,
  payloadTime,
  pipelinePayload,
  pushPayload,
} from '../../src/sandbox/payloads/index.ts';

const BASE = 'http://git.test:8080';
const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'hooks');

/** Every key path of a JSON value: `a.b`, arrays as `a[]` (their first element stands for all). */
function keyPaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) {
    const first: unknown = value[0];
    return first !== null && typeof first === 'object' ? keyPaths(first, `${prefix}[]`) : [`${prefix}[]`];
  }
  if (value !== null && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>)
      .flatMap(([key, child]) => [
        `${prefix}${prefix ? '.' : ''}${key}`,
        ...keyPaths(child, `${prefix}${prefix ? '.' : ''}${key}`),
      ])
      .sort();
  }
  return [];
}

async function sample(name: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path.join(FIXTURES, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

const PAYLOAD_TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/;
const COMMIT_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/;

let dir = '';
let ctx: SandboxContext;
let alice: UserRec;
let bob: UserRec;
let project: ProjectRec;
let head: GitCommit;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'hookbot-payloads-'));
  const db = createDb(emptyData(new Date().toISOString()));
  ctx = {
    db,
    git: createGitRepos(dir),
    hooks: createHookDispatcher(db),
    on: { push: [], status: [] },
    baseUrl: () => BASE,
  };
  alice = addUser(db, { username: 'alice', name: 'Alice Liddell' });
  bob = addUser(db, { username: 'bob', name: 'Bob Builder' });
  const group = addGroup(db, { name: 'Acme Corp', path: 'acme', owner_id: alice.id });
  project = await addProject(ctx, {
    name: 'Web',
    path: 'web',
    namespace_id: group.id,
    creator_id: alice.id,
    description: 'The web front end',
    visibility_level: 10,
    initialFiles: { 'README.md': '# Web\n' },
  });
  head = (await ctx.git.branch(project.id, 'master'))!;
});

afterAll(async () => {
  await ctx.hooks.close();
  await rm(dir, { recursive: true, force: true });
});

function issue(overrides: Partial<IssueRec> = {}): IssueRec {
  const rec: IssueRec = {
    id: ctx.db.nextId('issues'),
    iid: ctx.db.nextIid('issues', project.id),
    project_id: project.id,
    title: 'Search is slow',
    description: 'It takes ages',
    state: 'opened',
    author_id: alice.id,
    assignee_id: bob.id,
    milestone_id: null,
    labels: ['bug'],
    confidential: false,
    moved_to_id: null,
    deleted: false,
    created_at: '2016-01-19T08:40:25.934Z',
    updated_at: '2016-01-20T09:00:00.000Z',
    ...overrides,
  };
  ctx.db.data.issues.push(rec);
  return rec;
}

function mergeRequest(overrides: Partial<MergeRequestRec> = {}): MergeRequestRec {
  const rec: MergeRequestRec = {
    id: ctx.db.nextId('mergeRequests'),
    iid: ctx.db.nextIid('mergeRequests', project.id),
    project_id: project.id,
    title: 'WIP: faster search',
    description: 'Indexes',
    state: 'opened',
    source_branch: 'search',
    target_branch: 'master',
    source_project_id: project.id,
    target_project_id: project.id,
    author_id: alice.id,
    assignee_id: bob.id,
    milestone_id: null,
    labels: [],
    upvotes: 0,
    downvotes: 0,
    merge_status: 'can_be_merged',
    merge_when_build_succeeds: false,
    merge_user_id: null,
    merge_params: {},
    last_head_sha: null,
    merge_commit_sha: null,
    deleted: false,
    created_at: '2016-02-01T10:00:00.000Z',
    updated_at: '2016-02-02T11:30:15.500Z',
    ...overrides,
  };
  ctx.db.data.mergeRequests.push(rec);
  return rec;
}

function note(overrides: Partial<NoteRec>): NoteRec {
  const rec: NoteRec = {
    id: ctx.db.nextId('notes'),
    project_id: project.id,
    body: 'Looks good',
    author_id: bob.id,
    noteable_type: 'Issue',
    noteable_id: null,
    commit_id: null,
    path: null,
    line: null,
    line_type: null,
    system: false,
    created_at: '2016-03-01T12:00:00.000Z',
    updated_at: '2016-03-01T12:00:00.000Z',
    ...overrides,
  };
  ctx.db.data.notes.push(rec);
  return rec;
}

describe('payload timestamps', () => {
  it.each([
    ['2016-01-19T08:40:25.934Z', '2016-01-19 08:40:25 UTC'],
    ['2013-12-03T17:15:43Z', '2013-12-03 17:15:43 UTC'],
    ['2016-08-12T17:23:28+02:00', '2016-08-12 15:23:28 UTC'],
  ])('turns the API form %s into the payload form %s', (api, expected) => {
    expect(payloadTime(api)).toBe(expected);
  });

  it('keeps null as null', () => {
    expect(payloadTime(null)).toBeNull();
  });
});

describe('issuePayload', () => {
  it('has the key set of the official issue sample', async () => {
    const payload = issuePayload(ctx, issue(), alice, 'open');
    expect(keyPaths(payload)).toEqual(keyPaths(await sample('issue')));
  });

  it('fills the values from the records, with payload timestamps and URLs under the base URL', () => {
    const rec = issue();
    const payload = issuePayload(ctx, rec, alice, 'update') as any;
    expect(payload.object_kind).toBe('issue');
    expect(payload.user).toEqual({ name: 'Alice Liddell', username: 'alice', avatar_url: null });
    expect(payload.assignee).toEqual({ name: 'Bob Builder', username: 'bob', avatar_url: null });
    expect(payload.object_attributes).toMatchObject({
      id: rec.id,
      iid: rec.iid,
      title: 'Search is slow',
      author_id: alice.id,
      assignee_id: bob.id,
      project_id: project.id,
      state: 'opened',
      created_at: '2016-01-19 08:40:25 UTC',
      updated_at: '2016-01-20 09:00:00 UTC',
      url: `${BASE}/acme/web/issues/${rec.iid}`,
      action: 'update',
    });
    expect(payload.project).toEqual({
      name: 'Web',
      description: 'The web front end',
      web_url: `${BASE}/acme/web`,
      avatar_url: null,
      git_ssh_url: 'git@git.test:acme/web.git',
      git_http_url: `${BASE}/acme/web.git`,
      namespace: 'Acme Corp',
      visibility_level: 10,
      path_with_namespace: 'acme/web',
      default_branch: 'master',
      homepage: `${BASE}/acme/web`,
      url: 'git@git.test:acme/web.git',
      ssh_url: 'git@git.test:acme/web.git',
      http_url: `${BASE}/acme/web.git`,
    });
    expect(payload.repository).toEqual({
      name: 'Web',
      url: 'git@git.test:acme/web.git',
      description: 'The web front end',
      homepage: `${BASE}/acme/web`,
    });
  });

  it('carries no labels and no changes (that era), and no assignee when unassigned', () => {
    const payload = issuePayload(ctx, issue({ assignee_id: null }), alice, 'close');
    expect(payload).not.toHaveProperty('labels');
    expect(payload).not.toHaveProperty('changes');
    expect(payload).not.toHaveProperty('assignee');
    expect(payload.object_attributes).not.toHaveProperty('labels');
  });
});

describe('mergeRequestPayload', () => {
  it('has the key set of the official merge request sample', async () => {
    const payload = mergeRequestPayload(ctx, mergeRequest(), alice, 'open', { lastCommit: head });
    expect(keyPaths(payload)).toEqual(keyPaths(await sample('merge_request')));
  });

  it('fills last_commit from the given commit, work_in_progress from the title, url and action', () => {
    const rec = mergeRequest();
    const payload = mergeRequestPayload(ctx, rec, alice, 'merge', { lastCommit: head }) as any;
    const attrs = payload.object_attributes;
    expect(attrs).toMatchObject({
      id: rec.id,
      iid: rec.iid,
      source_branch: 'search',
      target_branch: 'master',
      st_commits: null,
      st_diffs: null,
      merge_status: 'can_be_merged',
      created_at: '2016-02-01 10:00:00 UTC',
      updated_at: '2016-02-02 11:30:15 UTC',
      work_in_progress: true,
      url: `${BASE}/acme/web/merge_requests/${rec.iid}`,
      action: 'merge',
      assignee: { name: 'Bob Builder', username: 'bob', avatar_url: null },
    });
    expect(attrs.last_commit).toEqual({
      id: head.id,
      message: head.message,
      timestamp: head.committed_date,
      url: `${BASE}/acme/web/commit/${head.id}`,
      author: { name: head.author_name, email: head.author_email },
    });
    expect(attrs.last_commit.timestamp).toMatch(COMMIT_TIME);
    expect(attrs.source.path_with_namespace).toBe('acme/web');
    expect(attrs.target.path_with_namespace).toBe('acme/web');
  });

  it.each([
    ['given', { oldrev: 'a'.repeat(40) }, true],
    ['not given', {}, false],
    ['the blank sha', { oldrev: BLANK_SHA }, false],
  ])('carries oldrev only when a real previous head is %s', (_name, extra, present) => {
    const payload = mergeRequestPayload(ctx, mergeRequest(), alice, 'update', extra) as any;
    expect('oldrev' in payload.object_attributes).toBe(present);
  });

  it('falls back to last_head_sha without a given commit, and to null without either', () => {
    const withSha = mergeRequestPayload(ctx, mergeRequest({ last_head_sha: head.id }), alice, 'close') as any;
    expect(withSha.object_attributes.last_commit.id).toBe(head.id);
    const without = mergeRequestPayload(ctx, mergeRequest({ assignee_id: null }), alice, 'open') as any;
    expect(without.object_attributes.last_commit).toBeNull();
    expect(without.object_attributes).not.toHaveProperty('assignee');
    expect(without).not.toHaveProperty('labels');
    expect(without).not.toHaveProperty('changes');
  });

  it.each([
    ['WIP: faster search', true],
    ['[WIP] faster search', true],
    ['wip faster search', true],
    ['Faster search', false],
    ['Wipe the cache', false],
  ])('reads work_in_progress from the title %j', (title, wip) => {
    const payload = mergeRequestPayload(ctx, mergeRequest({ title }), alice, 'open') as any;
    expect(payload.object_attributes.work_in_progress).toBe(wip);
  });
});

describe('notePayload', () => {
  it('has the key set of the official sample of a note on a merge request', async () => {
    const mr = mergeRequest({ last_head_sha: head.id });
    const payload = notePayload(ctx, note({ noteable_type: 'MergeRequest', noteable_id: mr.id }), bob);
    expect(keyPaths(payload)).toEqual(keyPaths(await sample('note-merge_request')));
  });

  it('describes a note on a merge request', () => {
    const mr = mergeRequest();
    const rec = note({ noteable_type: 'MergeRequest', noteable_id: mr.id });
    const payload = notePayload(ctx, rec, bob) as any;
    expect(payload.project_id).toBe(project.id);
    expect(payload.object_attributes).toEqual({
      id: rec.id,
      note: 'Looks good',
      noteable_type: 'MergeRequest',
      author_id: bob.id,
      created_at: '2016-03-01 12:00:00 UTC',
      updated_at: '2016-03-01 12:00:00 UTC',
      project_id: project.id,
      attachment: null,
      line_code: null,
      commit_id: '',
      noteable_id: mr.id,
      system: false,
      st_diff: null,
      url: `${BASE}/acme/web/merge_requests/${mr.iid}#note_${rec.id}`,
    });
    expect(payload.merge_request).toMatchObject({ id: mr.id, iid: mr.iid, position: 0, locked_at: null });
    expect(payload.merge_request.created_at).toMatch(PAYLOAD_TIME);
  });

  it('embeds the issue of a note on an issue, as the 8.x documentation shows it', () => {
    const target = issue();
    const rec = note({ noteable_type: 'Issue', noteable_id: target.id });
    const payload = notePayload(ctx, rec, bob) as any;
    expect(Object.keys(payload).sort()).toEqual(
      ['object_kind', 'user', 'project_id', 'project', 'repository', 'object_attributes', 'issue'].sort(),
    );
    expect(Object.keys(payload.issue).sort()).toEqual(
      [
        'id',
        'title',
        'assignee_id',
        'author_id',
        'project_id',
        'created_at',
        'updated_at',
        'position',
        'branch_name',
        'description',
        'milestone_id',
        'state',
        'iid',
      ].sort(),
    );
    expect(payload.issue).toMatchObject({
      id: target.id,
      iid: target.iid,
      created_at: '2016-01-19 08:40:25 UTC',
    });
    expect(payload.object_attributes.url).toBe(`${BASE}/acme/web/issues/${target.iid}#note_${rec.id}`);
  });

  it('embeds the commit of a note on a commit, with the line code of a line note', async () => {
    await loadCommit(ctx, project.id, head.id);
    const rec = note({
      noteable_type: 'Commit',
      commit_id: head.id,
      path: 'README.md',
      line: 1,
      line_type: 'new',
    });
    const payload = notePayload(ctx, rec, bob) as any;
    expect(payload.commit).toEqual({
      id: head.id,
      message: head.message,
      timestamp: head.committed_date,
      url: `${BASE}/acme/web/commit/${head.id}`,
      author: { name: head.author_name, email: head.author_email },
    });
    expect(payload.object_attributes).toMatchObject({
      noteable_type: 'Commit',
      noteable_id: null,
      commit_id: head.id,
      line_code: expect.stringMatching(/^[0-9a-f]{40}_0_1$/),
      url: `${BASE}/acme/web/commit/${head.id}#note_${rec.id}`,
    });
    expect(payload).not.toHaveProperty('issue');
    expect(payload).not.toHaveProperty('merge_request');
  });
});

describe('pushPayload', () => {
  let before = '';
  const commits: GitCommit[] = [];

  beforeAll(async () => {
    await ctx.git.createBranch(project.id, 'feature', 'master');
    before = head.id;
    const author = { name: 'Carol Coder', email: 'carol@example.com' };
    const steps = [
      { path: 'src/app.js', content: 'one', mode: 'create' as const },
      { path: 'README.md', content: '# Web!\n', mode: 'update' as const },
    ];
    for (const [i, step] of steps.entries())
      commits.push(
        await ctx.git.commitFile(project.id, {
          branch: 'feature',
          message: `Step ${i + 1}`,
          author,
          ...step,
        }),
      );
  });

  it('has the key set of the official push sample', async () => {
    const payload = await pushPayload(ctx, project, {
      ref: 'refs/heads/feature',
      before,
      after: commits.at(-1)!.id,
      user: alice,
    });
    expect(keyPaths(payload)).toEqual(keyPaths(await sample('push')));
  });

  it('lists the commits between before and after, oldest first, with their changed files', async () => {
    const after = commits.at(-1)!.id;
    const payload = (await pushPayload(ctx, project, {
      ref: 'refs/heads/feature',
      before,
      after,
      user: alice,
    })) as any;
    expect(payload).toMatchObject({
      object_kind: 'push',
      before,
      after,
      ref: 'refs/heads/feature',
      checkout_sha: after,
      user_id: alice.id,
      user_name: 'Alice Liddell',
      user_email: alice.email,
      project_id: project.id,
      total_commits_count: 2,
    });
    expect(payload.commits).toEqual([
      {
        id: commits[0]!.id,
        message: commits[0]!.message,
        timestamp: commits[0]!.committed_date,
        url: `${BASE}/acme/web/commit/${commits[0]!.id}`,
        author: { name: 'Carol Coder', email: 'carol@example.com' },
        added: ['src/app.js'],
        modified: [],
        removed: [],
      },
      {
        id: commits[1]!.id,
        message: commits[1]!.message,
        timestamp: commits[1]!.committed_date,
        url: `${BASE}/acme/web/commit/${commits[1]!.id}`,
        author: { name: 'Carol Coder', email: 'carol@example.com' },
        added: [],
        modified: ['README.md'],
        removed: [],
      },
    ]);
    for (const c of payload.commits) expect(c.timestamp).toMatch(COMMIT_TIME);
  });

  it('lets a later note on an open merge request show the head last pushed to its source branch', async () => {
    const after = commits.at(-1)!;
    await pushPayload(ctx, project, { ref: 'refs/heads/feature', before, after: after.id, user: alice });
    const mr = mergeRequest({ source_branch: 'feature' });
    const payload = notePayload(ctx, note({ noteable_type: 'MergeRequest', noteable_id: mr.id }), bob) as any;
    expect(payload.merge_request.last_commit).toEqual({
      id: after.id,
      message: after.message,
      timestamp: after.committed_date,
      url: `${BASE}/acme/web/commit/${after.id}`,
      author: { name: 'Carol Coder', email: 'carol@example.com' },
    });
  });

  it('takes the commits not on the default branch for a new branch', async () => {
    const payload = (await pushPayload(ctx, project, {
      ref: 'refs/heads/feature',
      before: BLANK_SHA,
      after: commits.at(-1)!.id,
      user: alice,
    })) as any;
    expect(payload.commits.map((c: { id: string }) => c.id)).toEqual(commits.map((c) => c.id));
  });

  it('keeps the latest 20 commits, oldest first, and counts them all', async () => {
    await ctx.git.createBranch(project.id, 'many', 'master');
    const made: string[] = [];
    for (let i = 1; i <= 21; i += 1) {
      const c = await ctx.git.commitFile(project.id, {
        branch: 'many',
        path: `file-${i}.txt`,
        content: String(i),
        message: `Commit ${i}`,
        author: { name: 'Carol Coder', email: 'carol@example.com' },
        mode: 'create',
      });
      made.push(c.id);
    }
    const payload = (await pushPayload(ctx, project, {
      ref: 'refs/heads/many',
      before: head.id,
      after: made.at(-1)!,
      user: alice,
    })) as any;
    expect(payload.total_commits_count).toBe(21);
    expect(payload.commits.map((c: { id: string }) => c.id)).toEqual(made.slice(1));
  });

  it('describes a removed branch with no commits and no checkout sha', async () => {
    const payload = (await pushPayload(ctx, project, {
      ref: 'refs/heads/feature',
      before: commits.at(-1)!.id,
      after: BLANK_SHA,
      user: alice,
    })) as any;
    expect(payload).toMatchObject({
      object_kind: 'push',
      checkout_sha: null,
      commits: [],
      total_commits_count: 0,
    });
  });

  it('makes a tag_push for refs/tags/ with the tagged commit', async () => {
    const payload = (await pushPayload(ctx, project, {
      ref: 'refs/tags/v1.0.0',
      before: BLANK_SHA,
      after: head.id,
      user: alice,
    })) as any;
    expect(payload.object_kind).toBe('tag_push');
    expect(payload.ref).toBe('refs/tags/v1.0.0');
    expect(payload.commits.map((c: { id: string }) => c.id)).toEqual([head.id]);
    expect(payload.total_commits_count).toBe(1);
  });
});

describe('combinedStatus (8.x pipeline status)', () => {
  const s = (status: StatusRec['status'], allow_failure = false) => ({ status, allow_failure });
  it.each([
    ['no statuses', [], 'none'],
    ['all success', [s('success'), s('success')], 'success'],
    ['success and an allowed failure', [s('success'), s('failed', true)], 'success'],
    ['all pending', [s('pending'), s('pending')], 'pending'],
    ['one running', [s('running'), s('success')], 'running'],
    ['pending beside a finished one', [s('pending'), s('success')], 'running'],
    ['pending beside a failed one', [s('pending'), s('failed')], 'running'],
    ['a failure', [s('success'), s('failed')], 'failed'],
    ['a failure and a cancel', [s('failed'), s('canceled')], 'failed'],
    ['canceled and success', [s('canceled'), s('success')], 'canceled'],
    ['all canceled', [s('canceled')], 'canceled'],
  ] as const)('gives %s -> %s', (_name, statuses, expected) => {
    expect(combinedStatus(statuses)).toBe(expected);
  });
});

describe('pipelinePayload', () => {
  function status(overrides: Partial<StatusRec>): StatusRec {
    return {
      id: ctx.db.nextId('statuses'),
      project_id: project.id,
      sha: head.id,
      ref: 'master',
      name: 'ci',
      status: 'success',
      target_url: null,
      description: null,
      allow_failure: false,
      author_id: alice.id,
      created_at: '2016-08-12T15:23:28.000Z',
      started_at: '2016-08-12T15:24:00.000Z',
      finished_at: '2016-08-12T15:25:03.000Z',
      ...overrides,
    };
  }

  it('has the keys the 8.x documentation shows for a pipeline event', async () => {
    await loadCommit(ctx, project.id, head.id);
    const payload = pipelinePayload(ctx, project, head.id, [status({})], alice) as any;
    expect(Object.keys(payload).sort()).toEqual(
      ['object_kind', 'object_attributes', 'user', 'project', 'commit', 'builds'].sort(),
    );
    expect(Object.keys(payload.object_attributes).sort()).toEqual(
      [
        'id',
        'ref',
        'tag',
        'sha',
        'before_sha',
        'status',
        'stages',
        'created_at',
        'finished_at',
        'duration',
      ].sort(),
    );
    // Pipeline payloads carry the project without the deprecated keys.
    expect(Object.keys(payload.project).sort()).toEqual(
      [
        'name',
        'description',
        'web_url',
        'avatar_url',
        'git_ssh_url',
        'git_http_url',
        'namespace',
        'visibility_level',
        'path_with_namespace',
        'default_branch',
      ].sort(),
    );
    expect(keyPaths(payload.builds[0])).toEqual(
      [
        'id',
        'stage',
        'name',
        'status',
        'created_at',
        'started_at',
        'finished_at',
        'when',
        'manual',
        'user',
        'user.name',
        'user.username',
        'user.avatar_url',
        'runner',
        'artifacts_file',
        'artifacts_file.filename',
        'artifacts_file.size',
      ].sort(),
    );
    expect(payload.commit).toMatchObject({
      id: head.id,
      message: head.message,
      timestamp: head.committed_date,
    });
  });

  it('combines the latest status per name and reports finish time and duration once finished', () => {
    const first = status({ name: 'build', status: 'failed' });
    const retried = status({
      name: 'build',
      status: 'success',
      started_at: '2016-08-12T15:25:00.000Z',
      finished_at: '2016-08-12T15:26:29.000Z',
    });
    const test = status({ name: 'test' });
    const payload = pipelinePayload(ctx, project, head.id, [first, retried, test], alice) as any;
    expect(payload.object_attributes).toMatchObject({
      id: first.id,
      ref: 'master',
      tag: false,
      sha: head.id,
      before_sha: BLANK_SHA,
      status: 'success',
      stages: ['external'],
      created_at: '2016-08-12 15:23:28 UTC',
      finished_at: '2016-08-12 15:26:29 UTC',
      duration: 149,
    });
    expect(payload.builds.map((b: { id: number }) => b.id)).toEqual([first.id, retried.id, test.id]);
    expect(payload.builds[0]).toMatchObject({
      stage: 'external',
      name: 'build',
      status: 'failed',
      started_at: '2016-08-12 15:24:00 UTC',
      when: 'on_success',
      manual: false,
      runner: null,
    });
  });

  it('has no finish time or duration while running', () => {
    const payload = pipelinePayload(
      ctx,
      project,
      head.id,
      [status({ status: 'running', finished_at: null }), status({ name: 'lint' })],
      alice,
    ) as any;
    expect(payload.object_attributes).toMatchObject({ status: 'running', finished_at: null, duration: null });
  });
});
