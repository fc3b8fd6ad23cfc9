import { beforeAll, describe, expect, it } from 'vitest';
import { useSandbox } from '../helpers/sandbox.ts';
import { makeWorld, type World } from '../helpers/issuable-world.ts';

describe('sandbox labels', () => {
  const sandbox = useSandbox();
  let w: World;

  beforeAll(async () => {
    const { sb, call } = sandbox();
    w = await makeWorld(sb, call, 'lbl');
  });

  const labels = () => `/projects/${w.project.id}/labels`;
  const addLabel = async (name: string, color = '#aabbcc', description?: string) => {
    const res = await w.developer.as('POST', labels(), { body: { name, color, description } });
    expect(res.status).toBe(200);
    return res.body;
  };
  const issueLabels = async (id: number) =>
    (await w.owner.as('GET', `/projects/${w.project.id}/issues/${id}`)).body.labels;

  describe('POST /projects/:id/labels', () => {
    it('answers 200 (docs/api-v3.md#labels) with name, color and description', async () => {
      const res = await w.developer.as('POST', labels(), {
        body: { name: 'bug', color: '#d9534f', description: 'Bug reported by user' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: 'bug', color: '#d9534f', description: 'Bug reported by user' });
    });

    it('reads form-encoded bodies', async () => {
      const res = await w.developer.as('POST', labels(), { form: { name: 'from-form', color: '#123456' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: 'from-form', color: '#123456', description: null });
    });

    it.each([
      ['#FFAABB', 200],
      ['#0a0b0c', 200],
      ['#fab', 400],
      ['FFAABB', 400],
      ['#GGGGGG', 400],
      ['#12345', 400],
      ['#1234567', 400],
      ['red', 400],
    ])(
      'colour %s answers %i (`#` and 6 hex digits, as docs/api-v3.md#labels states)',
      async (color, status) => {
        const res = await w.developer.as('POST', labels(), { body: { name: `colour ${color}`, color } });
        expect(res.status).toBe(status);
        if (status === 400) expect(res.body).toEqual({ message: { color: ['must be a valid color code'] } });
      },
    );

    it.each([
      ['no name', { color: '#aabbcc' }, { message: '400 (Bad request) "name" not given' }],
      ['no color', { name: 'x' }, { message: '400 (Bad request) "color" not given' }],
      ['a name with a comma', { name: 'a,b', color: '#aabbcc' }, { message: { title: ['is invalid'] } }],
      [
        'an invalid name and colour',
        { name: 'a,b', color: 'blue' },
        { message: { title: ['is invalid'], color: ['must be a valid color code'] } },
      ],
    ])('answers 400 for %s', async (_name, body, expected) => {
      const res = await w.developer.as('POST', labels(), { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(expected);
    });

    it('answers 409 `Label already exists`', async () => {
      await addLabel('twice');
      const res = await w.developer.as('POST', labels(), { body: { name: 'twice', color: '#000000' } });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ message: 'Label already exists' });
    });

    it.each([
      ['a reporter', 'reporter', 403],
      ['an outsider of the private project', 'outsider', 404],
    ] as const)('answers %s with %i', async (_name, role, status) => {
      const res = await w[role].as('POST', labels(), { body: { name: 'nope', color: '#aabbcc' } });
      expect(res.status).toBe(status);
    });
  });

  describe('GET /projects/:id/labels', () => {
    it('lists the labels by name with their issue and merge request counts, paginated', async () => {
      const { sb, call, db } = sandbox();
      const counted = await makeWorld(sb, call, 'cnt');
      const url = `/projects/${counted.project.id}/labels`;
      await counted.owner.as('POST', url, { body: { name: 'enhancement', color: '#5cb85c' } });
      const post = (title: string, labels: string) =>
        counted.owner.as('POST', `/projects/${counted.project.id}/issues`, { body: { title, labels } });
      await post('a', 'bug,confirmed');
      await post('b', 'confirmed');
      const closed = await post('c', 'confirmed');
      await counted.owner.as('PUT', `/projects/${counted.project.id}/issues/${closed.body.id}`, {
        body: { state_event: 'close' },
      });
      const now = db.now();
      db.data.mergeRequests.push({
        id: db.nextId('mergeRequests'),
        iid: 1,
        project_id: counted.project.id,
        title: 'mr',
        description: null,
        state: 'opened',
        source_branch: 'feature',
        target_branch: 'master',
        source_project_id: counted.project.id,
        target_project_id: counted.project.id,
        author_id: counted.owner.user.id,
        assignee_id: null,
        milestone_id: null,
        labels: ['bug'],
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
      });
      const res = await counted.guest.as('GET', url);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        {
          name: 'bug',
          color: '#428BCA',
          description: null,
          open_issues_count: 1,
          closed_issues_count: 0,
          open_merge_requests_count: 1,
        },
        {
          name: 'confirmed',
          color: '#428BCA',
          description: null,
          open_issues_count: 2,
          closed_issues_count: 1,
          open_merge_requests_count: 0,
        },
        {
          name: 'enhancement',
          color: '#5cb85c',
          description: null,
          open_issues_count: 0,
          closed_issues_count: 0,
          open_merge_requests_count: 0,
        },
      ]);
      expect(res.headers.get('x-total')).toBe('3');
      const page = await counted.guest.as('GET', url, { query: { per_page: 1, page: 2 } });
      expect(page.body.map((l: { name: string }) => l.name)).toEqual(['confirmed']);
    });

    it('answers 404 to an outsider of a private project', async () => {
      const res = await w.outsider.as('GET', labels());
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: '404 Project Not Found' });
    });
  });

  describe('PUT /projects/:id/labels', () => {
    it('renames a label, on every issue that carries it too', async () => {
      await addLabel('old-name', '#111111', 'kept');
      const issue = await w.owner.as('POST', `/projects/${w.project.id}/issues`, {
        body: { title: 'labelled', labels: 'old-name,other' },
      });
      const res = await w.developer.as('PUT', labels(), { body: { name: 'old-name', new_name: 'new-name' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: 'new-name', color: '#111111', description: 'kept' });
      expect(await issueLabels(issue.body.id)).toEqual(['new-name', 'other']);
    });

    it('recolours and redescribes a label (form-encoded)', async () => {
      await addLabel('recolour');
      const res = await w.developer.as('PUT', labels(), {
        form: { name: 'recolour', color: '#ABCDEF', description: 'now blue-ish' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: 'recolour', color: '#ABCDEF', description: 'now blue-ish' });
    });

    it.each([
      ['no name', { new_name: 'x' }, 400, { message: '400 (Bad request) "name" not given' }],
      ['an unknown name', { name: 'ghost', color: '#aabbcc' }, 404, { message: '404 Label Not Found' }],
      [
        'neither new_name nor color (a description alone)',
        { name: 'existing', description: 'd' },
        400,
        { message: 'Required parameters "new_name" or "color" missing' },
      ],
      [
        'an invalid colour',
        { name: 'existing', color: '#abc' },
        400,
        { message: { color: ['must be a valid color code'] } },
      ],
      [
        'a new name that is taken',
        { name: 'existing', new_name: 'taken' },
        400,
        { message: { title: ['has already been taken'] } },
      ],
      [
        'an invalid new name',
        { name: 'existing', new_name: 'a,b' },
        400,
        { message: { title: ['is invalid'] } },
      ],
    ])('answers for %s', async (_name, body, status, expected) => {
      if (!sandbox().db.data.labels.some((l) => l.project_id === w.project.id && l.title === 'existing')) {
        await addLabel('existing');
        await addLabel('taken');
      }
      const res = await w.developer.as('PUT', labels(), { body });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(expected);
    });

    it('answers 403 to a reporter', async () => {
      await addLabel('locked');
      const res = await w.reporter.as('PUT', labels(), { body: { name: 'locked', color: '#000000' } });
      expect(res.status).toBe(403);
    });
  });

  describe('DELETE /projects/:id/labels', () => {
    it('answers 200 with the deleted label record and takes the label off every issue', async () => {
      await addLabel('doomed', '#5843AD', 'New feature introduced');
      const issue = await w.owner.as('POST', `/projects/${w.project.id}/issues`, {
        body: { title: 'carries doomed', labels: 'doomed,survivor' },
      });
      const res = await w.developer.as('DELETE', labels(), { query: { name: 'doomed' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: expect.any(Number),
        title: 'doomed',
        color: '#5843AD',
        description: 'New feature introduced',
        project_id: w.project.id,
        template: false,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(await issueLabels(issue.body.id)).toEqual(['survivor']);
      const again = await w.developer.as('DELETE', labels(), { query: { name: 'doomed' } });
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ message: '404 Label Not Found' });
    });

    it.each([
      ['no name', 'developer', {}, 400, { message: '400 (Bad request) "name" not given' }],
      ['a reporter', 'reporter', { name: 'survivor' }, 403, { message: '403 Forbidden' }],
    ] as const)('answers %s', async (_name, role, form, status, expected) => {
      const res = await w[role].as('DELETE', labels(), { form });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(expected);
    });
  });

  // The last 8.x releases (8.13 on) refuse only the comma, the separator of the `labels` list.
  describe('names with `?` and `&`', () => {
    const ODD_NAMES = ['label?', 'label&foo', '?', '&'];

    it.each(ODD_NAMES)('creates, lists, renames and deletes %j', async (name) => {
      const created = await w.developer.as('POST', labels(), { body: { name, color: '#aabbcc' } });
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({ name, color: '#aabbcc' });
      const listed = await w.developer.as('GET', labels(), { query: { per_page: 100 } });
      expect(listed.body.map((l: { name: string }) => l.name)).toContain(name);

      const renamed = await w.developer.as('PUT', labels(), { form: { name, new_name: `${name}&2?` } });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ name: `${name}&2?` });

      const deleted = await w.developer.as('DELETE', labels(), { query: { name: `${name}&2?` } });
      expect(deleted.status).toBe(200);
      expect(deleted.body).toMatchObject({ title: `${name}&2?` });
      const after = await w.developer.as('GET', labels(), { query: { per_page: 100 } });
      expect(after.body.map((l: { name: string }) => l.name)).not.toContain(`${name}&2?`);
    });

    it('still refuses a comma in a new name', async () => {
      const res = await w.developer.as('POST', labels(), { form: { name: 'a,b?', color: '#aabbcc' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: { title: ['is invalid'] } });
    });
  });
});
