import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushEvent } from '../../src/sandbox/context.ts';
import { addProject, addUser, ensureUserNamespace } from '../../src/sandbox/factories.ts';
import { readsFiles } from '../../src/sandbox/git.ts';
import { DEVELOPER, GUEST, MASTER, REPORTER } from '../../src/sandbox/permissions.ts';
import { useSandbox } from '../helpers/sandbox.ts';

const ZERO = '0000000000000000000000000000000000000000';

describe('sandbox repository files', () => {
  const sb = useSandbox();
  const pushes: PushEvent[] = [];
  const listener = (event: PushEvent) => {
    pushes.push(event);
  };
  beforeAll(() => {
    sb().ctx.on.push.push(listener);
  });
  afterAll(() => {
    const list = sb().ctx.on.push;
    list.splice(list.indexOf(listener), 1);
  });

  /** The sandbox's repositories read files too (what GET .../files answers from). */
  const reader = () => {
    const git = sb().ctx.git;
    if (!readsFiles(git)) throw new Error('the sandbox repositories cannot read files');
    return git;
  };

  let n = 0;
  async function world(options: { empty?: boolean; archived?: boolean } = {}) {
    const { ctx, db } = sb();
    n += 1;
    const owner = addUser(db, { username: `fowner${n}`, name: `File Owner ${n}` });
    const project = await addProject(ctx, {
      name: `files-${n}`,
      namespace_id: ensureUserNamespace(db, owner).id,
      creator_id: owner.id,
      initialFiles: options.empty ? undefined : { 'README.md': 'hello\n', 'docs/guide.md': '# Guide\n' },
    });
    project.archived = options.archived ?? false;
    const member = (name: string, level: number) => {
      const user = addUser(db, { username: `${name}${n}`, name: `${name} ${n}` });
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
      users: {
        owner,
        master: member('fmaster', MASTER),
        developer: member('fdev', DEVELOPER),
        reporter: member('frep', REPORTER),
        guest: member('fguest', GUEST),
        stranger: addUser(db, { username: `fstranger${n}` }),
      },
      base: `/projects/${project.id}/repository/files`,
      head: async (branch = 'master') => ctx.git.branch(project.id, branch),
      read: async (ref: string, path: string) =>
        (await reader().readFile(project.id, ref, path))?.content.toString('utf8'),
    };
  }

  const newFile = (extra: Record<string, string> = {}) => ({
    file_path: 'src/app.ts',
    branch_name: 'master',
    content: 'export const app = 1;\n',
    commit_message: 'Add the app',
    ...extra,
  });

  describe('POST /projects/:id/repository/files', () => {
    it('creates a file with one commit, answers 201 and tells the push listeners', async () => {
      const w = await world();
      const before = (await w.head())!;
      pushes.length = 0;
      const res = await sb().call('POST', w.base, {
        token: w.users.developer.private_token,
        body: newFile(),
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ file_path: 'src/app.ts', branch_name: 'master' });
      const after = (await w.head())!;
      expect(after).toMatchObject({
        parent_ids: [before.id],
        message: 'Add the app',
        author_name: w.users.developer.name,
        author_email: w.users.developer.email,
      });
      expect(await w.read('master', 'src/app.ts')).toBe('export const app = 1;\n');
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ ref: 'refs/heads/master', before: before.id, after: after.id });
      expect(pushes[0]!.user.id).toBe(w.users.developer.id);
      expect(pushes[0]!.project.id).toBe(w.project.id);
    });

    it('decodes base64 content and takes the given author, sent as a form', async () => {
      const w = await world();
      const bytes = Buffer.from([0, 1, 2, 253, 254, 255]);
      const res = await sb().call('POST', w.base, {
        form: newFile({
          file_path: 'bin/blob.dat',
          content: bytes.toString('base64'),
          encoding: 'base64',
          author_name: 'Ghost Writer',
          author_email: 'ghost@example.com',
        }),
      });
      expect(res.status).toBe(201);
      const file = await reader().readFile(w.project.id, 'master', 'bin/blob.dat');
      expect(file?.content.equals(bytes)).toBe(true);
      expect(await w.head()).toMatchObject({
        author_name: 'Ghost Writer',
        author_email: 'ghost@example.com',
      });
    });

    it('creates the first commit of an empty repository, with an all-zeros before', async () => {
      const w = await world({ empty: true });
      pushes.length = 0;
      const res = await sb().call('POST', w.base, { body: newFile() });
      expect(res.status).toBe(201);
      const head = (await w.head())!;
      expect(head.parent_ids).toEqual([]);
      expect(pushes[0]).toMatchObject({ before: ZERO, after: head.id, ref: 'refs/heads/master' });
    });

    it('commits on another branch and leaves master alone', async () => {
      const { call } = sb();
      const w = await world();
      await call('POST', `/projects/${w.project.id}/repository/branches`, {
        body: { branch_name: 'topic', ref: 'master' },
      });
      const master = (await w.head())!;
      const res = await call('POST', w.base, { body: newFile({ branch_name: 'topic' }) });
      expect(res.status).toBe(201);
      expect(res.body.branch_name).toBe('topic');
      expect((await w.head())!.id).toBe(master.id);
      expect((await w.head('topic'))!.parent_ids).toEqual([master.id]);
    });

    it.each([
      ['file_path', { file_path: undefined }],
      ['branch_name', { branch_name: undefined }],
      ['content', { content: undefined }],
      ['commit_message', { commit_message: undefined }],
      ['content', { content: '' }],
    ])('refuses a missing %s', async (name, override) => {
      const w = await world();
      const body = { ...newFile(), ...override };
      const res = await sb().call('POST', w.base, { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: `400 (Bad request) "${name}" not given` });
    });

    it.each([
      [
        'an existing file',
        { file_path: 'README.md' },
        'Your changes could not be committed because a file with the same name already exists',
      ],
      [
        'an existing directory',
        { file_path: 'docs' },
        'Your changes could not be committed because a file with the same name already exists',
      ],
      [
        'a missing branch',
        { branch_name: 'nope' },
        'You can only create or edit files when you are on a branch',
      ],
    ])('refuses to create %s', async (_name, override, message) => {
      const w = await world();
      const before = (await w.head())!;
      pushes.length = 0;
      const res = await sb().call('POST', w.base, { body: newFile(override) });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
      expect((await w.head())!.id).toBe(before.id);
      expect(pushes).toEqual([]);
    });

    it.each(['../escape.txt', 'a/../../b', '.git/config', 'README.md/inside'])(
      'refuses the path %s',
      async (filePath) => {
        const w = await world();
        const res = await sb().call('POST', w.base, { body: newFile({ file_path: filePath }) });
        expect(res.status).toBe(400);
        expect(res.body.message).toMatch(/^Your changes could not be committed/);
      },
    );

    it.each([
      ['a reporter', 'reporter', false, 403],
      ['a guest', 'guest', false, 403],
      ['a stranger to a private project', 'stranger', false, 404],
      ['a developer of an archived project', 'developer', true, 403],
    ] as const)('refuses %s', async (_name, who, archived, status) => {
      const w = await world({ archived });
      const res = await sb().call('POST', w.base, { token: w.users[who].private_token, body: newFile() });
      expect(res.status).toBe(status);
    });

    it.each([
      ['a developer', 'developer', 400],
      ['a master', 'master', 201],
      ['the owner', 'owner', 201],
    ] as const)('lets only masters push to a protected branch: %s', async (_name, who, status) => {
      const { call } = sb();
      const w = await world();
      await call('PUT', `/projects/${w.project.id}/repository/branches/master/protect`);
      const res = await call('POST', w.base, { token: w.users[who].private_token, body: newFile() });
      expect(res.status).toBe(status);
      if (status === 400)
        expect(res.body).toEqual({ message: 'You are not allowed to push into this branch' });
    });
  });

  describe('PUT /projects/:id/repository/files', () => {
    it('updates a file with one commit, answers 200 and tells the push listeners', async () => {
      const w = await world();
      const before = (await w.head())!;
      pushes.length = 0;
      const res = await sb().call('PUT', w.base, {
        body: newFile({ file_path: 'README.md', content: 'hello again\n', commit_message: 'Update README' }),
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ file_path: 'README.md', branch_name: 'master' });
      const after = (await w.head())!;
      expect(after.parent_ids).toEqual([before.id]);
      expect(after.title).toBe('Update README');
      expect(await w.read('master', 'README.md')).toBe('hello again\n');
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ before: before.id, after: after.id, ref: 'refs/heads/master' });
    });

    it.each([
      ['a missing file', { file_path: 'nope.md' }, "A file with this name doesn't exist"],
      ['a directory', { file_path: 'docs' }, "A file with this name doesn't exist"],
      [
        'on a missing branch',
        { file_path: 'README.md', branch_name: 'nope' },
        'You can only create or edit files when you are on a branch',
      ],
    ])('refuses to update %s', async (_name, override, message) => {
      const w = await world();
      const res = await sb().call('PUT', w.base, { body: newFile(override) });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message });
    });

    it('refuses a reporter', async () => {
      const w = await world();
      const res = await sb().call('PUT', w.base, {
        token: w.users.reporter.private_token,
        body: newFile({ file_path: 'README.md' }),
      });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: '403 Forbidden' });
    });
  });

  describe('DELETE /projects/:id/repository/files', () => {
    it('removes a file with one commit, answers 200 and tells the push listeners', async () => {
      const w = await world();
      const before = (await w.head())!;
      pushes.length = 0;
      const res = await sb().call('DELETE', w.base, {
        body: { file_path: 'docs/guide.md', branch_name: 'master', commit_message: 'Drop the guide' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ file_path: 'docs/guide.md', branch_name: 'master' });
      const after = (await w.head())!;
      expect(after.parent_ids).toEqual([before.id]);
      expect(await w.read('master', 'docs/guide.md')).toBeUndefined();
      expect(await w.read('master', 'README.md')).toBe('hello\n');
      expect(await w.read(before.id, 'docs/guide.md')).toBe('# Guide\n');
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ before: before.id, after: after.id, ref: 'refs/heads/master' });
    });

    it('refuses a missing file, and a reporter', async () => {
      const w = await world();
      const body = { file_path: 'nope.md', branch_name: 'master', commit_message: 'Drop' };
      const missing = await sb().call('DELETE', w.base, { body });
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({ message: "A file with this name doesn't exist" });
      const reporter = await sb().call('DELETE', w.base, {
        token: w.users.reporter.private_token,
        body: { ...body, file_path: 'README.md' },
      });
      expect(reporter.status).toBe(403);
    });
  });

  describe('GET /projects/:id/repository/files', () => {
    it('answers the file at a ref, base64 encoded, with its blob and commits', async () => {
      const { call } = sb();
      const w = await world();
      const first = (await w.head())!;
      await call('PUT', w.base, { body: newFile({ file_path: 'README.md', content: 'changed\n' }) });
      const second = (await w.head())!;
      const blob = await reader().readFile(w.project.id, 'master', 'docs/guide.md');
      const res = await call('GET', w.base, { query: { file_path: 'docs/guide.md', ref: 'master' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        file_name: 'guide.md',
        file_path: 'docs/guide.md',
        size: 8,
        encoding: 'base64',
        content: Buffer.from('# Guide\n').toString('base64'),
        ref: 'master',
        blob_id: blob!.blob_id,
        commit_id: second.id,
        last_commit_id: first.id,
      });
      const old = await call('GET', w.base, { query: { file_path: 'README.md', ref: first.id } });
      expect(Buffer.from(old.body.content, 'base64').toString()).toBe('hello\n');
      expect(old.body.commit_id).toBe(first.id);
    });

    it.each([
      ['no file_path', 400, { ref: 'master' }, { message: '400 (Bad request) "file_path" not given' }],
      ['no ref', 400, { file_path: 'README.md' }, { message: '400 (Bad request) "ref" not given' }],
      ['an unknown ref', 404, { file_path: 'README.md', ref: 'nope' }, { message: '404 Commit Not Found' }],
      ['an unknown file', 404, { file_path: 'nope.md', ref: 'master' }, { message: '404 File Not Found' }],
      ['a directory', 404, { file_path: 'docs', ref: 'master' }, { message: '404 File Not Found' }],
    ])('answers %s with %i', async (_name, status, query, body) => {
      const w = await world();
      const res = await sb().call('GET', w.base, { query });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(body);
    });

    it.each([
      ['a guest of a private project', 'guest', 403],
      ['a stranger to a private project', 'stranger', 404],
      ['a reporter', 'reporter', 200],
    ] as const)('answers %s with the right status', async (_name, who, status) => {
      const w = await world();
      const res = await sb().call('GET', w.base, {
        token: w.users[who].private_token,
        query: { file_path: 'README.md', ref: 'master' },
      });
      expect(res.status).toBe(status);
    });
  });

  describe('concurrency', () => {
    it('lands every one of many concurrent file commits on one branch', async () => {
      const { call, ctx } = sb();
      const w = await world();
      const count = 8;
      const answers = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          call('POST', w.base, {
            body: newFile({ file_path: `many/${i}.txt`, content: `${i}\n`, commit_message: `file ${i}` }),
          }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: count }, () => 201));
      const log = await ctx.git.log(w.project.id, 'master');
      expect(log).toHaveLength(count + 1);
      for (let i = 0; i < count; i++) expect(await w.read('master', `many/${i}.txt`)).toBe(`${i}\n`);
    });
  });
});
