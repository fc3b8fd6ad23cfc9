import { beforeAll, describe, expect, it } from 'vitest';
import { useSandbox } from '../helpers/sandbox.ts';
import { makeWorld, type World } from '../helpers/issuable-world.ts';
import { DEFAULT_LABEL_COLOR } from '../../src/sandbox/routes/labels.ts';

describe('sandbox issues', () => {
  // A clock one second further at each reading, so that every record has its own time and the
  // created_at/updated_at orders are unambiguous.
  let tick = 0;
  const sandbox = useSandbox({ clock: () => new Date(Date.UTC(2016, 0, 1) + tick++ * 1000) });
  let w: World;
  /** A second private project of the same owner, where the developer is also a member. */
  let other: World;
  let milestoneId: number;

  beforeAll(async () => {
    const { sb, call, db } = sandbox();
    w = await makeWorld(sb, call, 'iss');
    other = await makeWorld(sb, call, 'oth');
    const now = db.now();
    milestoneId = db.nextId('milestones');
    db.data.milestones.push({
      id: milestoneId,
      iid: 1,
      project_id: w.project.id,
      title: 'v1.0',
      description: '',
      state: 'active',
      due_date: null,
      created_at: now,
      updated_at: now,
    });
  });

  const issues = () => `/projects/${w.project.id}/issues`;
  const create = async (title: string, extra: Record<string, unknown> = {}, who = w.owner) => {
    const res = await who.as('POST', issues(), { body: { title, ...extra } });
    expect(res.status).toBe(200);
    return res.body;
  };

  describe('POST /projects/:id/issues', () => {
    it('answers 200 with the new issue, creating unknown labels with the default colour', async () => {
      const res = await w.owner.as('POST', issues(), {
        body: {
          title: 'First',
          description: 'Something broke',
          labels: 'zeta,alpha',
          assignee_id: w.developer.user.id,
          milestone_id: milestoneId,
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        iid: 1,
        project_id: w.project.id,
        title: 'First',
        description: 'Something broke',
        state: 'opened',
        labels: ['alpha', 'zeta'],
        milestone: { id: milestoneId, title: 'v1.0' },
        assignee: { id: w.developer.user.id, username: w.developer.user.username },
        author: { id: w.owner.user.id, username: w.owner.user.username },
        subscribed: true,
        confidential: false,
      });
      expect(res.body.author.web_url).toMatch(new RegExp(`/u/${w.owner.user.username}$`));
      const labels = await w.owner.as('GET', `/projects/${w.project.id}/labels`);
      expect(labels.body).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'alpha', color: DEFAULT_LABEL_COLOR }),
          expect.objectContaining({ name: 'zeta', color: DEFAULT_LABEL_COLOR }),
        ]),
      );
    });

    it('reads form-encoded bodies', async () => {
      const res = await w.owner.as('POST', issues(), { form: { title: 'From a form', labels: 'alpha' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ title: 'From a form', labels: ['alpha'] });
    });

    it('records an `opened` event and fires Issue Hook `open`', async () => {
      const issue = await create('Hooked');
      const event = sandbox().db.data.events.find(
        (e) => e.target_type === 'Issue' && e.target_id === issue.id,
      );
      expect(event).toMatchObject({
        action_name: 'opened',
        author_id: w.owner.user.id,
        target_title: 'Hooked',
      });
      expect(await w.deliveries()).toContainEqual(['Issue Hook', 'open']);
    });

    it.each([
      ['no title', {}, { message: '400 (Bad request) "title" not given' }],
      ['an empty title', { title: '' }, { message: '400 (Bad request) "title" not given' }],
      [
        'a title over 255 characters',
        { title: 'x'.repeat(256) },
        { message: { title: ['is too long (maximum is 255 characters)'] } },
      ],
      [
        'a label name with a comma, in a JSON array',
        { title: 't', labels: ['ok', 'bad,name'] },
        { message: { labels: { 'bad,name': { title: ['is invalid'] } } } },
      ],
    ])('answers 400 for %s', async (_name, body, expected) => {
      const res = await w.owner.as('POST', issues(), { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(expected);
    });

    it('honours created_at from the owner and ignores it from a developer', async () => {
      const at = '2015-03-04T05:06:07.000Z';
      expect((await create('Old', { created_at: at })).created_at).toBe(at);
      expect((await create('Not old', { created_at: at }, w.developer)).created_at).not.toBe(at);
    });

    it('drops labels (existing ones too), assignee and milestone from a guest (8.x filter_params: admin_issue)', async () => {
      await create('Makes the label', { labels: 'guest-known' });
      const issue = await create(
        'By a guest',
        { assignee_id: w.developer.user.id, milestone_id: milestoneId, labels: 'guest-known' },
        w.guest,
      );
      expect(issue).toMatchObject({ assignee: null, milestone: null, labels: [] });
    });

    it('accepts label names with `?` and `&` (last 8.x releases), in JSON and in forms', async () => {
      const json = await create('Odd labels', { labels: 'label?,label&foo,?,&' });
      // Sorted here: the order of the answer is the server's title collation, not what this test is about.
      expect([...json.labels].sort()).toEqual(['&', '?', 'label&foo', 'label?']);
      const form = await w.owner.as('POST', issues(), { form: { title: 'Odd form', labels: 'label&foo,?' } });
      expect(form.status).toBe(200);
      expect([...form.body.labels].sort()).toEqual(['?', 'label&foo']);
      const edited = await w.owner.as('PUT', `${issues()}/${json.id}`, { form: { labels: '&,new?&' } });
      expect(edited.status).toBe(200);
      expect([...edited.body.labels].sort()).toEqual(['&', 'new?&']);
    });

    describe('labels that do not exist yet', () => {
      const labelNames = async () =>
        (await w.owner.as('GET', `/projects/${w.project.id}/labels`, { query: { per_page: 100 } })).body.map(
          (l: { name: string }) => l.name,
        );

      it('are created for a reporter, who may administer labels', async () => {
        const issue = await create('By a reporter', { labels: 'made-by-reporter' }, w.reporter);
        expect(issue.labels).toEqual(['made-by-reporter']);
        expect(await labelNames()).toContain('made-by-reporter');
      });

      it('are dropped with the existing ones, and nothing is created, for a guest (last 8.x releases)', async () => {
        await create('Makes the label', { labels: 'known-to-guest' });
        const issue = await create('Guest names two', { labels: 'known-to-guest,made-by-guest' }, w.guest);
        expect(issue.labels).toEqual([]);
        expect(await labelNames()).not.toContain('made-by-guest');
      });

      it('are dropped for a guest who edits their own issue', async () => {
        const mine = await create('A guest edits', {}, w.guest);
        const res = await w.guest.as('PUT', `${issues()}/${mine.id}`, { body: { labels: 'edit-by-guest' } });
        expect(res.status).toBe(200);
        expect(await labelNames()).not.toContain('edit-by-guest');
      });

      it('are dropped for a non-member of a public project', async () => {
        const { sb, call } = sandbox();
        const pub = await makeWorld(sb, call, 'pubiss', { visibility_level: 20 });
        const path = `/projects/${pub.project.id}`;
        await pub.owner.as('POST', `${path}/issues`, { body: { title: 'Makes it', labels: 'public-known' } });
        const res = await pub.outsider.as('POST', `${path}/issues`, {
          body: { title: 'From outside', labels: 'public-known,made-by-outsider' },
        });
        expect(res.status).toBe(200);
        expect(res.body.labels).toEqual([]);
        const names = (await pub.owner.as('GET', `${path}/labels`)).body.map((l: { name: string }) => l.name);
        expect(names).toEqual(['public-known']);
      });
    });

    it('answers 404 for a private project the caller is not a member of', async () => {
      const res = await w.outsider.as('POST', issues(), { body: { title: 'x' } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Project Not Found' });
    });

    it('accepts the project as a URL-encoded namespace/path', async () => {
      const path = encodeURIComponent(`${w.owner.user.username}/${w.project.path}`);
      const res = await w.owner.as('POST', `/projects/${path}/issues`, { body: { title: 'By path' } });
      expect(res.status).toBe(200);
      expect(res.body.project_id).toBe(w.project.id);
    });
  });

  describe('GET one issue: the path takes the global id, never the iid', () => {
    it('finds an issue by its id and answers 404 `404 Not found` for its iid', async () => {
      // Issues of the other project push the global ids away from the iids.
      await other.owner.as('POST', `/projects/${other.project.id}/issues`, { body: { title: 'elsewhere' } });
      const issue = await create('By id');
      expect(issue.id).not.toBe(issue.iid);
      const byId = await w.owner.as('GET', `${issues()}/${issue.id}`);
      expect(byId.status).toBe(200);
      expect(byId.body).toMatchObject({ id: issue.id, iid: issue.iid, title: 'By id' });
      // Its iid, taken as an id, names another issue or none at all.
      const byIid = await w.owner.as('GET', `${issues()}/${issue.iid}`);
      expect(byIid.body.id).not.toBe(issue.id);
      const unknown = await w.owner.as('GET', `${issues()}/999999`);
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ message: '404 Not found' });
    });

    it('answers 404 for an issue of another project', async () => {
      const elsewhere = await other.owner.as('POST', `/projects/${other.project.id}/issues`, {
        body: { title: 'not here' },
      });
      const res = await w.owner.as('GET', `${issues()}/${elsewhere.body.id}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Not found' });
    });
  });

  describe('lists', () => {
    let list: World;
    beforeAll(async () => {
      const { sb, call } = sandbox();
      list = await makeWorld(sb, call, 'lst');
      const post = (body: Record<string, unknown>, who = list.owner) =>
        who.as('POST', `/projects/${list.project.id}/issues`, { body });
      await post({ title: 'one', labels: 'bug,ui' });
      const two = await post({ title: 'two', labels: 'bug' });
      await post({ title: 'three' }, list.developer);
      const four = await post({ title: 'four', labels: 'ui' });
      await list.owner.as('PUT', `/projects/${list.project.id}/issues/${four.body.id}`, {
        body: { state_event: 'close' },
      });
      await list.owner.as('PUT', `/projects/${list.project.id}/issues/${two.body.id}`, {
        body: { description: 'touched last' },
      });
    });
    const titles = (body: { title: string }[]) => body.map((i) => i.title);

    it.each([
      ['no filter: newest first', {}, ['four', 'three', 'two', 'one']],
      ['sort=asc', { sort: 'asc' }, ['one', 'two', 'three', 'four']],
      ['state=opened', { state: 'opened' }, ['three', 'two', 'one']],
      ['state=closed', { state: 'closed' }, ['four']],
      ['labels=bug', { labels: 'bug' }, ['two', 'one']],
      ['labels=bug,ui (all of them)', { labels: 'bug,ui' }, ['one']],
      ['iid=2', { iid: 2 }, ['two']],
      ['order_by=updated_at', { order_by: 'updated_at' }, ['two', 'four', 'three', 'one']],
      [
        'order_by=updated_at&sort=asc',
        { order_by: 'updated_at', sort: 'asc' },
        ['one', 'three', 'four', 'two'],
      ],
    ])('GET /projects/:id/issues with %s', async (_name, query, expected) => {
      const res = await list.owner.as('GET', `/projects/${list.project.id}/issues`, { query });
      expect(res.status).toBe(200);
      expect(titles(res.body)).toEqual(expected);
    });

    it('filters by milestone title', async () => {
      const { db } = sandbox();
      const id = db.nextId('milestones');
      db.data.milestones.push({
        id,
        iid: 1,
        project_id: list.project.id,
        title: 'm1',
        description: '',
        state: 'active',
        due_date: null,
        created_at: db.now(),
        updated_at: db.now(),
      });
      await list.owner.as('POST', `/projects/${list.project.id}/issues`, {
        body: { title: 'five', milestone_id: id },
      });
      const res = await list.owner.as('GET', `/projects/${list.project.id}/issues`, {
        query: { milestone: 'm1' },
      });
      expect(titles(res.body)).toEqual(['five']);
    });

    it('paginates with the headers docs/api-v3.md#pagination lists', async () => {
      const res = await list.owner.as('GET', `/projects/${list.project.id}/issues`, {
        query: { per_page: 2, page: 2, sort: 'asc' },
      });
      expect(titles(res.body)).toEqual(['three', 'four']);
      expect(res.headers.get('x-total')).toBe('5');
      expect(res.headers.get('x-page')).toBe('2');
      expect(res.headers.get('link')).toContain('rel="next"');
    });

    it('GET /issues lists only the issues the caller created, with state and labels filters', async () => {
      const mine = await list.developer.as('GET', '/issues');
      expect(titles(mine.body)).toEqual(['three']);
      const closed = await list.owner.as('GET', '/issues', { query: { state: 'closed' } });
      expect(titles(closed.body)).toEqual(['four']);
      const labelled = await list.owner.as('GET', '/issues', { query: { labels: 'bug,ui' } });
      expect(titles(labelled.body)).toEqual(['one']);
    });

    it('filters by label names with `?` and `&`, encoded in the query', async () => {
      const path = `/projects/${w.project.id}/issues`;
      const both = await create('Filter both', { labels: 'q?,a&b' });
      const one = await create('Filter one', { labels: 'q?' });
      const byBoth = await w.owner.as('GET', path, { query: { labels: 'a&b,q?', per_page: 100 } });
      expect(byBoth.body.map((i: { id: number }) => i.id)).toEqual([both.id]);
      const byOne = await w.owner.as('GET', `${path}?labels=${encodeURIComponent('q?')}&per_page=100`);
      expect(byOne.body.map((i: { id: number }) => i.id)).toEqual([one.id, both.id]);
    });
  });

  describe('PUT /projects/:id/issues/:issue_id', () => {
    it('closes (closed) and reopens (opened, as docs/api-v3.md#issues states), each with its hook, event and system note', async () => {
      const issue = await create('Lifecycle');
      const url = `${issues()}/${issue.id}`;
      const closed = await w.developer.as('PUT', url, { body: { state_event: 'close' } });
      expect(closed.status).toBe(200);
      expect(closed.body.state).toBe('closed');
      const reopened = await w.developer.as('PUT', url, { form: { state_event: 'reopen' } });
      expect(reopened.status).toBe(200);
      expect(reopened.body.state).toBe('opened');
      const { db } = sandbox();
      const actions = db.data.events.filter((e) => e.target_type === 'Issue' && e.target_id === issue.id);
      expect(actions.map((e) => e.action_name)).toEqual(['opened', 'closed', 'reopened']);
      const notes = await w.owner.as('GET', `${url}/notes`);
      expect(notes.body.map((n: { body: string; system: boolean }) => [n.body, n.system])).toEqual([
        ['Status changed to closed', true],
        ['Status changed to reopened', true],
      ]);
      const hooks = await w.deliveries();
      expect(hooks).toContainEqual(['Issue Hook', 'close']);
      expect(hooks).toContainEqual(['Issue Hook', 'reopen']);
    });

    it('closing a closed issue changes nothing and fires nothing', async () => {
      const issue = await create('Twice');
      const url = `${issues()}/${issue.id}`;
      await w.owner.as('PUT', url, { body: { state_event: 'close' } });
      const before = (await w.deliveries()).length;
      const again = await w.owner.as('PUT', url, { body: { state_event: 'close' } });
      expect(again.status).toBe(200);
      expect(again.body.state).toBe('closed');
      expect((await w.deliveries()).length).toBe(before);
    });

    it('edits fields, replaces the whole label set (creating unknown labels) and fires `update`', async () => {
      const issue = await create('Edit me', { labels: 'alpha,zeta' });
      const res = await w.reporter.as('PUT', `${issues()}/${issue.id}`, {
        body: { title: 'Edited', description: 'new text', labels: 'brand-new', assignee_id: w.guest.user.id },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        title: 'Edited',
        description: 'new text',
        labels: ['brand-new'],
        assignee: { id: w.guest.user.id },
      });
      expect(
        sandbox().db.data.labels.some((l) => l.project_id === w.project.id && l.title === 'brand-new'),
      ).toBe(true);
      const hooks = await w.deliveries();
      expect(hooks).toContainEqual(['Issue Hook', 'update']);
    });

    it('clears the labels with an empty string and unassigns with assignee_id 0', async () => {
      const issue = await create('Clear me', { labels: 'alpha', assignee_id: w.developer.user.id });
      const res = await w.owner.as('PUT', `${issues()}/${issue.id}`, {
        body: { labels: '', assignee_id: 0 },
      });
      expect(res.body).toMatchObject({ labels: [], assignee: null });
    });

    it('lets a guest author edit the title but not the labels (real 8.x: labels need reporter)', async () => {
      const issue = await create('Guest wrote this', {}, w.guest);
      await w.owner.as('PUT', `${issues()}/${issue.id}`, { body: { labels: 'alpha' } });
      const res = await w.guest.as('PUT', `${issues()}/${issue.id}`, {
        body: { title: 'Guest edited', labels: 'zeta' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ title: 'Guest edited', labels: ['alpha'] });
    });

    it('answers 403 to a guest who is neither author nor assignee', async () => {
      const issue = await create('Not yours');
      const res = await w.guest.as('PUT', `${issues()}/${issue.id}`, { body: { title: 'mine now' } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: '403 Forbidden' });
    });

    it('answers 400 for a title over 255 characters and 404 for an unknown issue', async () => {
      const issue = await create('Valid');
      const long = await w.owner.as('PUT', `${issues()}/${issue.id}`, { body: { title: 'y'.repeat(300) } });
      expect(long.status).toBe(400);
      expect(long.body).toEqual({ message: { title: ['is too long (maximum is 255 characters)'] } });
      const missing = await w.owner.as('PUT', `${issues()}/999999`, { body: { title: 'x' } });
      expect(missing.status).toBe(404);
    });

    it('honours updated_at from the owner', async () => {
      const issue = await create('Dated');
      const at = '2016-01-02T03:04:05.000Z';
      const res = await w.owner.as('PUT', `${issues()}/${issue.id}`, {
        body: { description: 'd', updated_at: at },
      });
      expect(res.body.updated_at).toBe(at);
    });
  });

  describe('DELETE /projects/:id/issues/:issue_id', () => {
    it.each([
      ['a developer', 'developer', 403],
      ['a master', 'master', 403],
    ] as const)('answers 403 to %s', async (_name, role, status) => {
      const issue = await create('Keep me');
      const res = await w[role].as('DELETE', `${issues()}/${issue.id}`);
      expect(res.status).toBe(status);
    });

    it('lets the owner delete softly: then 404 and gone from lists; a second delete answers 404', async () => {
      const issue = await create('Delete me');
      const url = `${issues()}/${issue.id}`;
      const res = await w.owner.as('DELETE', url);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(issue.id);
      expect(sandbox().db.data.issues.find((i) => i.id === issue.id)?.deleted).toBe(true);
      expect((await w.owner.as('GET', url)).status).toBe(404);
      const list = await w.owner.as('GET', issues());
      expect(list.body.map((i: { id: number }) => i.id)).not.toContain(issue.id);
      const again = await w.owner.as('DELETE', url);
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ message: '404 Not found' });
    });

    it('lets an administrator delete', async () => {
      const issue = await create('Admin deletes');
      const res = await sandbox().call('DELETE', `${issues()}/${issue.id}`);
      expect(res.status).toBe(200);
    });
  });

  describe('POST /projects/:id/issues/:issue_id/move', () => {
    beforeAll(() => {
      // The owner may create in the target; the guest too, but is only a guest of the source.
      const { db } = sandbox();
      for (const user of [w.owner.user, w.guest.user])
        db.data.members.push({
          project_id: other.project.id,
          user_id: user.id,
          access_level: 40,
          created_at: db.now(),
        });
    });

    it('answers 201 with the new issue in the target; the old one is closed and points at it', async () => {
      const { db } = sandbox();
      await other.owner.as('POST', `/projects/${other.project.id}/labels`, {
        body: { name: 'alpha', color: '#00ff00' },
      });
      const issue = await create('Move me', { description: 'body', labels: 'alpha,zeta' }, w.developer);
      const res = await w.owner.as('POST', `${issues()}/${issue.id}/move`, {
        body: { to_project_id: other.project.id },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        project_id: other.project.id,
        title: 'Move me',
        description: 'body',
        labels: ['alpha'],
        state: 'opened',
        author: { id: w.developer.user.id },
      });
      expect(res.body.id).not.toBe(issue.id);
      const iids = db.data.issues.filter((i) => i.project_id === other.project.id).map((i) => i.iid);
      expect(res.body.iid).toBe(Math.max(...iids));
      const old = await w.owner.as('GET', `${issues()}/${issue.id}`);
      expect(old.body.state).toBe('closed');
      expect(db.data.issues.find((i) => i.id === issue.id)?.moved_to_id).toBe(res.body.id);
      expect(await w.deliveries()).toContainEqual(['Issue Hook', 'close']);
      expect(await other.deliveries()).toContainEqual(['Issue Hook', 'open']);
      const notes = await other.owner.as('GET', `/projects/${other.project.id}/issues/${res.body.id}/notes`);
      expect(notes.body.at(-1).body).toBe(
        `Moved from ${w.owner.user.username}/${w.project.path}#${issue.iid}`,
      );
    });

    it('answers 400 `Cannot move issue to project it originates from!`', async () => {
      const issue = await create('Stay');
      const res = await w.owner.as('POST', `${issues()}/${issue.id}/move`, {
        body: { to_project_id: w.project.id },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: 'Cannot move issue to project it originates from!' });
    });

    it.each([
      ['the caller is not a member of the target', 'reporter'],
      ['the caller is only a guest of the source', 'guest'],
    ] as const)(
      'answers 400 `Cannot move issue due to insufficient permissions!` when %s',
      async (_name, role) => {
        const issue = await create('Cannot move');
        const res = await w[role].as('POST', `${issues()}/${issue.id}/move`, {
          body: { to_project_id: other.project.id },
        });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ message: 'Cannot move issue due to insufficient permissions!' });
      },
    );

    it('refuses to move an issue that was moved already', async () => {
      const issue = await create('Once only');
      const first = await w.owner.as('POST', `${issues()}/${issue.id}/move`, {
        body: { to_project_id: other.project.id },
      });
      expect(first.status).toBe(201);
      const second = await w.owner.as('POST', `${issues()}/${issue.id}/move`, {
        body: { to_project_id: other.project.id },
      });
      expect(second.status).toBe(400);
      expect(second.body).toEqual({ message: 'Cannot move issue due to insufficient permissions!' });
    });

    it('answers 404 for an unknown target and 400 without to_project_id', async () => {
      const issue = await create('Nowhere');
      const unknown = await w.owner.as('POST', `${issues()}/${issue.id}/move`, {
        body: { to_project_id: 987654 },
      });
      expect(unknown.status).toBe(404);
      const missing = await w.owner.as('POST', `${issues()}/${issue.id}/move`, { body: {} });
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({ message: '400 (Bad request) "to_project_id" not given' });
    });
  });

  describe('subscription', () => {
    const sub = (id: number) => `${issues()}/${id}/subscription`;

    it('counts the author as subscribed: POST 304, DELETE 200, DELETE 304, POST 201, POST 304', async () => {
      const issue = await create('Subscribe', {}, w.developer);
      const steps: [string, number, boolean | undefined][] = [
        ['POST', 304, undefined],
        ['DELETE', 200, false],
        ['DELETE', 304, undefined],
        ['POST', 201, true],
        ['POST', 304, undefined],
      ];
      for (const [method, status, subscribed] of steps) {
        const res = await w.developer.as(method, sub(issue.id));
        expect([method, res.status]).toEqual([method, status]);
        if (subscribed === undefined) expect(res.text).toBe('');
        else expect(res.body.subscribed).toBe(subscribed);
      }
    });

    it('is relative to the caller, counts assignees and commenters, and keeps an explicit unsubscribe', async () => {
      const issue = await create('Others', { assignee_id: w.reporter.user.id });
      expect((await w.master.as('GET', `${issues()}/${issue.id}`)).body.subscribed).toBe(false);
      expect((await w.reporter.as('GET', `${issues()}/${issue.id}`)).body.subscribed).toBe(true);
      await w.master.as('POST', `${issues()}/${issue.id}/notes`, { body: { body: 'me too' } });
      expect((await w.master.as('POST', sub(issue.id))).status).toBe(304);
      expect((await w.master.as('DELETE', sub(issue.id))).status).toBe(200);
      await w.master.as('POST', `${issues()}/${issue.id}/notes`, { body: { body: 'still here' } });
      expect((await w.master.as('GET', `${issues()}/${issue.id}`)).body.subscribed).toBe(false);
    });

    it('answers 404 for an unknown issue', async () => {
      expect((await w.owner.as('POST', sub(999999))).status).toBe(404);
      expect((await w.owner.as('DELETE', sub(999999))).status).toBe(404);
    });
  });

  describe('confidential issues', () => {
    it('are visible to reporters, the author and the assignee only', async () => {
      const { sb, call } = sandbox();
      const pub = await makeWorld(sb, call, 'conf', { visibility_level: 20 });
      const post = await pub.guest.as('POST', `/projects/${pub.project.id}/issues`, {
        body: { title: 'secret', confidential: true },
      });
      expect(post.body.confidential).toBe(true);
      const url = `/projects/${pub.project.id}/issues/${post.body.id}`;
      const cases: [string, World['owner'], number][] = [
        ['author (a guest)', pub.guest, 200],
        ['reporter', pub.reporter, 200],
        ['outsider of a public project', pub.outsider, 404],
      ];
      for (const [name, who, status] of cases)
        expect([name, (await who.as('GET', url)).status]).toEqual([name, status]);
      const assigned = await pub.reporter.as('POST', `/projects/${pub.project.id}/issues`, {
        body: { title: 'secret for the guest', confidential: true, assignee_id: pub.guest.user.id },
      });
      const assignedUrl = `/projects/${pub.project.id}/issues/${assigned.body.id}`;
      expect((await pub.guest.as('GET', assignedUrl)).status).toBe(200);
      expect((await pub.outsider.as('GET', assignedUrl)).status).toBe(404);
      const list = await pub.outsider.as('GET', `/projects/${pub.project.id}/issues`);
      expect(list.body).toEqual([]);
      const open = await pub.outsider.as('POST', `/projects/${pub.project.id}/issues`, {
        body: { title: 'public' },
      });
      expect(open.status).toBe(200);
      expect((await pub.outsider.as('GET', `/projects/${pub.project.id}/issues`)).body).toHaveLength(1);
    });
  });
});
