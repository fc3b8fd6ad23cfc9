import { beforeAll, describe, expect, it } from 'vitest';
import { useSandbox } from '../helpers/sandbox.ts';
import { makeWorld, type World } from '../helpers/issuable-world.ts';
import type { MergeRequestRec } from '../../src/sandbox/db.ts';

describe('sandbox notes', () => {
  let tick = 0;
  const sandbox = useSandbox({ clock: () => new Date(Date.UTC(2016, 0, 1) + tick++ * 1000) });
  let w: World;
  let issue: { id: number; iid: number };
  let mr: MergeRequestRec;

  beforeAll(async () => {
    const { sb, call, db } = sandbox();
    w = await makeWorld(sb, call, 'nts');
    issue = (await w.owner.as('POST', `/projects/${w.project.id}/issues`, { body: { title: 'Talk here' } }))
      .body;
    // A merge request record of its own: this file tests the notes, not the merge request routes.
    const now = db.now();
    mr = {
      id: db.nextId('mergeRequests'),
      iid: 1,
      project_id: w.project.id,
      title: 'Some change',
      description: null,
      state: 'opened',
      source_branch: 'feature',
      target_branch: 'master',
      source_project_id: w.project.id,
      target_project_id: w.project.id,
      author_id: w.developer.user.id,
      assignee_id: null,
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
      created_at: now,
      updated_at: now,
    };
    db.data.mergeRequests.push(mr);
  });

  const noteables = () =>
    [
      ['an issue', `/projects/${w.project.id}/issues/${issue.id}/notes`, 'Issue', issue.id],
      ['a merge request', `/projects/${w.project.id}/merge_requests/${mr.id}/notes`, 'MergeRequest', mr.id],
    ] as const;

  describe.each([
    ['an issue', 0],
    ['a merge request', 1],
  ])('on %s', (_name, index) => {
    const at = () => noteables()[index]!;

    it('POST answers 201 with the note', async () => {
      const [, url, type, id] = at();
      const res = await w.reporter.as('POST', url, { body: { body: 'Looks good' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        body: 'Looks good',
        attachment: null,
        author: expect.objectContaining({ id: w.reporter.user.id, username: w.reporter.user.username }),
        created_at: expect.any(String),
        updated_at: expect.any(String),
        system: false,
        noteable_id: id,
        noteable_type: type,
        upvote: false,
        downvote: false,
      });
    });

    it('POST reads form-encoded bodies', async () => {
      const res = await w.reporter.as('POST', at()[1], { form: { body: 'from a form' } });
      expect(res.status).toBe(201);
      expect(res.body.body).toBe('from a form');
    });

    it.each([
      ['no body', {}],
      ['an empty body', { body: '' }],
    ])('POST answers 400 for %s', async (_name, body) => {
      const res = await w.owner.as('POST', at()[1], { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: '400 (Bad request) "body" not given' });
    });

    it('GET lists the notes oldest first, paginated, and GET one finds each by id', async () => {
      const [, url] = at();
      await w.owner.as('POST', url, { body: { body: 'first of two' } });
      await w.owner.as('POST', url, { body: { body: 'second of two' } });
      const list = await w.owner.as('GET', url);
      expect(list.status).toBe(200);
      const bodies = list.body.map((n: { body: string }) => n.body);
      expect(bodies.indexOf('first of two')).toBeLessThan(bodies.indexOf('second of two'));
      expect(list.headers.get('x-total')).toBe(String(list.body.length));
      const last = list.body.at(-1);
      const one = await w.owner.as('GET', `${url}/${last.id}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(last);
    });

    it('GET one answers 404 for an unknown note', async () => {
      const res = await w.owner.as('GET', `${at()[1]}/999999`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Not found' });
    });

    it('PUT edits a comment in place, by its author or a master, and fires no hook', async () => {
      const [, url] = at();
      const posted = (await w.developer.as('POST', url, { body: { body: 'first words' } })).body;
      const edited = await w.developer.as('PUT', `${url}/${posted.id}`, { body: { body: 'second words' } });
      expect(edited.status).toBe(200);
      expect(edited.body).toMatchObject({ id: posted.id, body: 'second words', author: posted.author });
      expect((await w.owner.as('GET', `${url}/${posted.id}`)).body.body).toBe('second words');
      const byMaster = await w.master.as('PUT', `${url}/${posted.id}`, { body: { body: 'by the master' } });
      expect(byMaster.status).toBe(200);
      const byReporter = await w.reporter.as('PUT', `${url}/${posted.id}`, { body: { body: 'mine now' } });
      expect(byReporter.status).toBe(403);
      expect((await w.owner.as('PUT', `${url}/999999`, { body: { body: 'x' } })).status).toBe(404);
      await sandbox().ctx.hooks.idle();
      const about = sandbox()
        .ctx.hooks.recent()
        .filter((d) => (d.payload.object_attributes as { id?: number } | undefined)?.id === posted.id);
      expect(about.map((d) => (d.payload.object_attributes as { note?: string }).note)).toEqual([
        'first words',
      ]);
    });

    it('fires Note Hook and records a `commented on` event', async () => {
      const res = await w.developer.as('POST', at()[1], { body: { body: 'hook me' } });
      const event = sandbox().db.data.events.find(
        (e) => e.target_type === 'Note' && e.target_id === res.body.id,
      );
      expect(event).toMatchObject({
        action_name: 'commented on',
        author_id: w.developer.user.id,
        note_id: res.body.id,
      });
      await sandbox().ctx.hooks.idle();
      const delivery = sandbox()
        .ctx.hooks.recent()
        .find(
          (d) =>
            d.hookId === w.hook.id &&
            (d.payload.object_attributes as { id?: number } | undefined)?.id === res.body.id,
        );
      expect(delivery?.event).toBe('Note Hook');
    });
  });

  it('fires Note Hook for notes a bot writes too (real servers do: bots must avoid loops)', async () => {
    const { db, sb, call } = sandbox();
    const { addUser } = await import('../../src/sandbox/factories.ts');
    const { memberOf } = await import('../helpers/issuable-world.ts');
    const bot = memberOf(sb, call, addUser(db, { username: 'nts-bot', name: 'Bot' }));
    db.data.members.push({
      project_id: w.project.id,
      user_id: bot.user.id,
      access_level: 30,
      created_at: db.now(),
    });
    const before = (await w.deliveries()).filter(([event]) => event === 'Note Hook').length;
    const res = await bot.as('POST', noteables()[0][1], { body: { body: 'automated reply' } });
    expect(res.status).toBe(201);
    const after = (await w.deliveries()).filter(([event]) => event === 'Note Hook').length;
    expect(after).toBe(before + 1);
  });

  it('subscribes the commenter implicitly and touches the issue', async () => {
    const created = await w.owner.as('POST', `/projects/${w.project.id}/issues`, {
      body: { title: 'quiet' },
    });
    const url = `/projects/${w.project.id}/issues/${created.body.id}`;
    expect((await w.master.as('GET', url)).body.subscribed).toBe(false);
    await w.master.as('POST', `${url}/notes`, { body: { body: 'I am here' } });
    const after = await w.master.as('GET', url);
    expect(after.body.subscribed).toBe(true);
    expect(after.body.updated_at > created.body.updated_at).toBe(true);
  });

  it('honours created_at from the owner only', async () => {
    const at = '2014-01-01T00:00:00.000Z';
    const url = noteables()[0][1];
    expect((await w.owner.as('POST', url, { body: { body: 'old', created_at: at } })).body.created_at).toBe(
      at,
    );
    expect(
      (await w.developer.as('POST', url, { body: { body: 'new', created_at: at } })).body.created_at,
    ).not.toBe(at);
  });

  it.each([
    ['an unknown issue', () => `/projects/${w.project.id}/issues/999999/notes`, '404 Not found'],
    [
      'an unknown merge request',
      () => `/projects/${w.project.id}/merge_requests/999999/notes`,
      '404 Not found',
    ],
    ['an unknown project', () => `/projects/999999/issues/${issue.id}/notes`, '404 Project Not Found'],
  ])('answers 404 for %s (GET and POST)', async (_name, path, message) => {
    for (const method of ['GET', 'POST']) {
      const res = await w.owner.as(method, path(), method === 'POST' ? { body: { body: 'x' } } : {});
      expect([method, res.status, res.body]).toEqual([method, 404, { message }]);
    }
  });

  it('answers 404 when the noteable is not visible: a private project or a confidential issue', async () => {
    const url = noteables()[0][1];
    const hidden = await w.outsider.as('GET', url);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: '404 Project Not Found' });
    const secret = await w.owner.as('POST', `/projects/${w.project.id}/issues`, {
      body: { title: 'secret', confidential: true },
    });
    const secretNotes = `/projects/${w.project.id}/issues/${secret.body.id}/notes`;
    expect((await w.guest.as('GET', secretNotes)).status).toBe(404);
    expect((await w.guest.as('POST', secretNotes, { body: { body: 'peek' } })).status).toBe(404);
    expect((await w.reporter.as('GET', secretNotes)).status).toBe(200);
  });

  it("answers 404 to a guest of a private project for a merge request's notes (8.13 on: read_merge_request is a reporter's)", async () => {
    const url = noteables()[1][1];
    expect(await w.guest.as('GET', url)).toMatchObject({
      status: 404,
      body: { message: '404 Notes Not Found' },
    });
    expect(await w.guest.as('POST', url, { body: { body: 'peek' } })).toMatchObject({
      status: 404,
      body: { message: '404 Note Not Found' },
    });
    expect((await w.reporter.as('GET', url)).status).toBe(200);
  });

  it('answers 404 for the notes of a deleted issue', async () => {
    const created = await w.owner.as('POST', `/projects/${w.project.id}/issues`, {
      body: { title: 'doomed' },
    });
    await w.owner.as('DELETE', `/projects/${w.project.id}/issues/${created.body.id}`);
    const res = await w.owner.as('GET', `/projects/${w.project.id}/issues/${created.body.id}/notes`);
    expect(res.status).toBe(404);
  });
});
