import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GitCommit } from '../../src/sandbox/context.ts';
import type { StatusRec } from '../../src/sandbox/db.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { GUEST, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

describe('sandbox commits', () => {
  const sb = useSandbox();
  afterEach(() => {
    vi.restoreAllMocks();
  });

  let n = 0;
  /**
   * A project with three commits on master: the initial README (one, two, three), a change that
   * turns line 2 into TWO and adds line 4, and a new file; plus a `feature` branch at the first commit.
   */
  async function world() {
    const { ctx, db } = sb();
    n += 1;
    const owner = addUser(db, { username: `cowner${n}`, name: `Owner ${n}` });
    const project = await addProject(ctx, {
      name: `commits-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: { 'README.md': 'one\ntwo\nthree\n' },
    });
    const author = { name: owner.name, email: owner.email };
    const first = (await ctx.git.branch(project.id, 'master'))!;
    await ctx.git.createBranch(project.id, 'feature', 'master');
    const second = await ctx.git.commitFile(project.id, {
      branch: 'master',
      path: 'README.md',
      content: 'one\nTWO\nthree\nfour\n',
      message: 'Change the README\n\nLine two and a fourth line.',
      author,
      mode: 'update',
    });
    const third = await ctx.git.commitFile(project.id, {
      branch: 'master',
      path: 'docs/a.md',
      content: 'a\n',
      message: 'Add docs',
      author,
      mode: 'create',
    });
    const reader = (level: number) => {
      const user = addUser(db, { username: `creader${level}-${n}` });
      db.data.members.push({
        project_id: project.id,
        user_id: user.id,
        access_level: level,
        created_at: db.now(),
      });
      return user;
    };
    return {
      project,
      owner,
      first,
      second,
      third,
      base: `/projects/${project.id}/repository/commits`,
      guest: reader(GUEST),
      reporter: reader(REPORTER),
      stranger: addUser(db, { username: `cstranger${n}` }),
    };
  }

  const listForm = (c: GitCommit) => ({
    id: c.id,
    short_id: c.id.slice(0, 11),
    title: c.title,
    author_name: c.author_name,
    author_email: c.author_email,
    created_at: c.committed_date,
    message: c.message,
    allow_failure: false,
  });

  describe('GET /projects/:id/repository/commits', () => {
    it('lists the default branch newest first, in the list form', async () => {
      const w = await world();
      const res = await sb().call('GET', w.base);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([listForm(w.third), listForm(w.second), listForm(w.first)]);
      expect(res.body[1].title).toBe('Change the README');
      expect(res.body[1].message).toBe('Change the README\n\nLine two and a fourth line.');
      expect(res.body[1].created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
    });

    it.each([
      ['a branch', 'feature', 1],
      ['a sha', 'second', 2],
      ['an unknown ref', 'nope', 0],
    ])('lists %s given as ref_name', async (_name, ref, count) => {
      const w = await world();
      const refName = ref === 'second' ? w.second.id : ref;
      const res = await sb().call('GET', w.base, { query: { ref_name: refName } });
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(count);
    });

    it('paginates with the headers docs/api-v3.md#pagination lists', async () => {
      const w = await world();
      const first = await sb().call('GET', w.base, { query: { per_page: 2 } });
      expect(first.body.map((c: any) => c.id)).toEqual([w.third.id, w.second.id]);
      expect(
        Object.fromEntries(
          ['x-total', 'x-total-pages', 'x-per-page', 'x-page', 'x-next-page', 'x-prev-page'].map((h) => [
            h,
            first.headers.get(h),
          ]),
        ),
      ).toEqual({
        'x-total': '3',
        'x-total-pages': '2',
        'x-per-page': '2',
        'x-page': '1',
        'x-next-page': '2',
        'x-prev-page': '',
      });
      const link = first.headers.get('link')!;
      expect(link).toContain('rel="next"');
      expect(link).toContain('rel="first"');
      expect(link).toContain('rel="last"');
      const next = /<([^>]+)>; rel="next"/.exec(link)![1]!;
      const second = await sb().call(
        'GET',
        `${new URL(next).pathname.replace('/api/v3', '')}${new URL(next).search}`,
      );
      expect(second.body.map((c: any) => c.id)).toEqual([w.first.id]);
      expect(second.headers.get('x-prev-page')).toBe('1');
    });

    it.each([
      ['a guest of a private project', 'guest', 403],
      ['a stranger to a private project', 'stranger', 404],
      ['a reporter', 'reporter', 200],
    ] as const)('answers %s with the right status', async (_name, who, status) => {
      const w = await world();
      const res = await sb().call('GET', w.base, { token: w[who].private_token });
      expect(res.status).toBe(status);
    });
  });

  describe('GET /projects/:id/repository/commits/:sha', () => {
    it.each([
      ['the full sha', (w: { second: GitCommit }) => w.second.id],
      ['a short sha', (w: { second: GitCommit }) => w.second.id.slice(0, 8)],
    ])('reads a commit by %s, in the single form', async (_name, ref) => {
      const w = await world();
      const res = await sb().call('GET', `${w.base}/${ref(w)}`);
      expect(res.status).toBe(200);
      const { allow_failure: _none, ...listed } = listForm(w.second);
      expect(res.body).toEqual({
        ...listed,
        committed_date: w.second.committed_date,
        authored_date: w.second.authored_date,
        parent_ids: [w.first.id],
        status: null,
      });
    });

    it('reads a branch head by branch name', async () => {
      const w = await world();
      const res = await sb().call('GET', `${w.base}/feature`);
      expect(res.body.id).toBe(w.first.id);
      expect(res.body.parent_ids).toEqual([]);
    });

    type S = [StatusRec['status'], string, boolean?];
    it.each<[string, S[], string]>([
      ['one success', [['success', 'a']], 'success'],
      [
        'a success and a pending',
        [
          ['success', 'a'],
          ['pending', 'b'],
        ],
        'running',
      ],
      [
        'only pending',
        [
          ['pending', 'a'],
          ['pending', 'b'],
        ],
        'pending',
      ],
      ['one running', [['running', 'a']], 'running'],
      [
        'a failure',
        [
          ['success', 'a'],
          ['failed', 'b'],
        ],
        'failed',
      ],
      [
        'a failure allowed to fail',
        [
          ['success', 'a'],
          ['failed', 'b', true],
        ],
        'success',
      ],
      [
        'a cancel and a success',
        [
          ['canceled', 'a'],
          ['success', 'b'],
        ],
        'canceled',
      ],
      [
        'a retried failure that then passed',
        [
          ['failed', 'a'],
          ['success', 'a'],
        ],
        'success',
      ],
    ])('gives the combined status of %s', async (_name, statuses, combined) => {
      const { db, call } = sb();
      const w = await world();
      for (const [status, name, allowFailure] of statuses)
        db.data.statuses.push({
          id: db.nextId('statuses'),
          project_id: w.project.id,
          sha: w.third.id,
          ref: 'master',
          name,
          status,
          target_url: null,
          description: null,
          allow_failure: allowFailure ?? false,
          author_id: w.owner.id,
          created_at: db.now(),
          started_at: null,
          finished_at: null,
        });
      expect((await call('GET', `${w.base}/master`)).body.status).toBe(combined);
      expect((await call('GET', `${w.base}/${w.second.id}`)).body.status).toBeNull();
    });

    it.each(['', '/diff', '/comments'])(
      'answers 404 Commit Not Found for an unknown sha (GET%s)',
      async (suffix) => {
        const w = await world();
        const res = await sb().call('GET', `${w.base}/0123456789abcdef0123456789abcdef01234567${suffix}`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: '404 Commit Not Found' });
      },
    );
  });

  describe('GET /projects/:id/repository/commits/:sha/diff', () => {
    it('answers the diff entries the commit introduces', async () => {
      const w = await world();
      const res = await sb().call('GET', `${w.base}/${w.second.id}/diff`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        {
          diff: '--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n three\n+four\n',
          old_path: 'README.md',
          new_path: 'README.md',
          a_mode: '100644',
          b_mode: '100644',
          new_file: false,
          renamed_file: false,
          deleted_file: false,
        },
      ]);
      const added = await sb().call('GET', `${w.base}/master/diff`);
      expect(added.body).toEqual([
        {
          diff: '--- /dev/null\n+++ b/docs/a.md\n@@ -0,0 +1 @@\n+a\n',
          old_path: 'docs/a.md',
          new_path: 'docs/a.md',
          a_mode: '0',
          b_mode: '100644',
          new_file: true,
          renamed_file: false,
          deleted_file: false,
        },
      ]);
      expect(added.headers.get('x-total')).toBe('1');
    });
  });

  describe('commit comments', () => {
    type Placement = { path: unknown; line: unknown; line_type: unknown };
    const onLine = (path: string, line: number): Placement => ({ path, line, line_type: 'new' });
    const atEnd: Placement = { path: null, line: null, line_type: null };

    it.each<[string, 'full' | 'short' | 'branch', Record<string, unknown>, Placement]>([
      [
        'on an added line, with the full sha',
        'full',
        { path: 'README.md', line: 2, line_type: 'new' },
        onLine('README.md', 2),
      ],
      [
        'on another added line, line as a string',
        'full',
        { path: 'README.md', line: '4', line_type: 'new' },
        onLine('README.md', 4),
      ],
      [
        'with a branch name instead of the sha',
        'branch',
        { path: 'README.md', line: 2, line_type: 'new' },
        atEnd,
      ],
      ['with a short sha', 'short', { path: 'README.md', line: 2, line_type: 'new' }, atEnd],
      ['on a path the commit does not touch', 'full', { path: 'nope.md', line: 2, line_type: 'new' }, atEnd],
      ['on a context line', 'full', { path: 'README.md', line: 3, line_type: 'new' }, atEnd],
      ['on a line that does not exist', 'full', { path: 'README.md', line: 99, line_type: 'new' }, atEnd],
      ['with line_type old', 'full', { path: 'README.md', line: 2, line_type: 'old' }, atEnd],
      ['with an invalid line', 'full', { path: 'README.md', line: 'two', line_type: 'new' }, atEnd],
      ['without line_type', 'full', { path: 'README.md', line: 2 }, atEnd],
      ['without path or line', 'full', {}, atEnd],
    ])('places a comment %s', async (_name, how, placement, expected) => {
      const { call, db } = sb();
      const w = await world();
      // A branch whose head is the second commit: a branch-name comment lands on the same commit.
      await sb().ctx.git.createBranch(w.project.id, 'at-second', w.second.id);
      const sha = { full: w.second.id, short: w.second.id.slice(0, 11), branch: 'at-second' }[how];
      const res = await call('POST', `${w.base}/${sha}/comments`, {
        body: { note: 'Looks good', ...placement },
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        note: 'Looks good',
        ...expected,
        author: {
          id: 1,
          username: 'root',
          name: 'Administrator',
          state: 'active',
          avatar_url: null,
          web_url: `${sb().sb.url}/u/root`,
        },
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      const stored = db.data.notes.at(-1)!;
      expect(stored).toMatchObject({
        noteable_type: 'Commit',
        noteable_id: null,
        commit_id: w.second.id,
        project_id: w.project.id,
      });
    });

    it('lists a commit’s comments oldest first with the longer author, paginated', async () => {
      const { call, db } = sb();
      const w = await world();
      const commenter = addUser(db, { username: `commenter${n}`, email: `commenter${n}@example.com` });
      db.data.members.push({
        project_id: w.project.id,
        user_id: commenter.id,
        access_level: REPORTER,
        created_at: db.now(),
      });
      await call('POST', `${w.base}/${w.second.id}/comments`, {
        token: commenter.private_token,
        body: { note: 'first', path: 'README.md', line: 4, line_type: 'new' },
      });
      await call('POST', `${w.base}/${w.second.id}/comments`, { form: { note: 'second' } });
      await call('POST', `${w.base}/${w.third.id}/comments`, { body: { note: 'elsewhere' } });

      const res = await call('GET', `${w.base}/${w.second.id}/comments`);
      expect(res.status).toBe(200);
      expect(res.body.map((c: any) => [c.note, c.path, c.line, c.line_type])).toEqual([
        ['first', 'README.md', 4, 'new'],
        ['second', null, null, null],
      ]);
      expect(res.body[0].author).toEqual({
        id: commenter.id,
        username: commenter.username,
        name: commenter.name,
        state: 'active',
        avatar_url: null,
        web_url: `${sb().sb.url}/u/${commenter.username}`,
        email: commenter.email,
        created_at: commenter.created_at,
      });
      expect(res.headers.get('x-total')).toBe('2');
      const page = await call('GET', `${w.base}/${w.second.id}/comments`, {
        query: { per_page: 1, page: 2 },
      });
      expect(page.body.map((c: any) => c.note)).toEqual(['second']);
      // By branch name: the same commit's comments.
      const byBranch = await call('GET', `${w.base}/master/comments`);
      expect(byBranch.body.map((c: any) => c.note)).toEqual(['elsewhere']);
    });

    it('fires the Note Hook and records a "commented on" event', async () => {
      const { call, ctx, db } = sb();
      const w = await world();
      const emit = vi.spyOn(ctx.hooks, 'emit');
      const res = await call('POST', `${w.base}/${w.third.id}/comments`, { body: { note: 'hook me' } });
      expect(res.status).toBe(201);
      const note = db.data.notes.at(-1)!;
      expect(note.body).toBe('hook me');
      expect(emit).toHaveBeenCalledTimes(1);
      expect(emit).toHaveBeenCalledWith(
        w.project.id,
        'Note Hook',
        expect.objectContaining({ object_kind: 'note' }),
      );
      expect(db.data.events.at(-1)).toMatchObject({
        project_id: w.project.id,
        action_name: 'commented on',
        target_type: 'Note',
        target_id: note.id,
        note_id: note.id,
        author_id: 1,
      });
    });

    it.each([
      ['no note', {}, 400, { message: '400 (Bad request) "note" not given' }],
      ['an empty note', { note: '' }, 400, { message: '400 (Bad request) "note" not given' }],
    ])('refuses a comment with %s', async (_name, body, status, answer) => {
      const { call, db } = sb();
      const w = await world();
      const before = db.data.notes.length;
      const res = await call('POST', `${w.base}/${w.second.id}/comments`, { body });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(answer);
      expect(db.data.notes.length).toBe(before);
    });

    it('refuses a comment on an unknown commit with 404 Commit Not Found', async () => {
      const w = await world();
      const res = await sb().call('POST', `${w.base}/nope/comments`, { body: { note: 'x' } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Commit Not Found' });
    });

    it.each([
      ['a guest of a private project', 'guest', 403],
      ['a stranger to a private project', 'stranger', 404],
    ] as const)('refuses a comment by %s', async (_name, who, status) => {
      const w = await world();
      const res = await sb().call('POST', `${w.base}/${w.second.id}/comments`, {
        token: w[who].private_token,
        body: { note: 'x' },
      });
      expect(res.status).toBe(status);
    });
  });
});
