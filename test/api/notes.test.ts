import { describe, expect, it } from 'vitest';
import note from '../fixtures/api/note.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const mrNote = {
  ...note,
  id: 303,
  body: 'Rebased, please look again.',
  noteable_id: 1,
  noteable_type: 'MergeRequest',
};
const systemNote = { ...note, id: 301, body: 'Status changed to closed', system: true };

describe('notes client', () => {
  useNock();
  const client = testClient();

  it('lists the notes of an issue, per_page=100, system notes included and marked', async () => {
    api().get('/projects/8/issues/43/notes').query({ per_page: '100' }).reply(200, [systemNote, note]);
    const items = await collect(client.notes.listIssueNotes(8, 43));
    expect(items.map((n) => [n.id, n.system, n.noteable_type])).toEqual([
      [301, true, 'Issue'],
      [302, false, 'Issue'],
    ]);
  });

  it('comments on an issue with a body field', async () => {
    api().post('/projects/8/issues/43/notes', { body: note.body }).reply(201, note);
    expect(await client.notes.createIssueNote(8, 43, note.body)).toMatchObject({ id: 302, body: note.body });
  });

  it('lists the notes of a merge request by its global id', async () => {
    api().get('/projects/8/merge_requests/1/notes').query({ per_page: '100' }).reply(200, [mrNote]);
    const items = await collect(client.notes.listMergeRequestNotes(8, 1));
    expect(items.map((n) => [n.noteable_id, n.noteable_type])).toEqual([[1, 'MergeRequest']]);
  });

  it('edits a merge request note in place with PUT and a body field', async () => {
    const edited = { ...mrNote, body: 'Rebased twice.' };
    api().put('/projects/8/merge_requests/1/notes/303', { body: edited.body }).reply(200, edited);
    expect(await client.notes.updateMergeRequestNote(8, 1, 303, edited.body)).toMatchObject({
      id: 303,
      body: 'Rebased twice.',
    });
  });

  it('comments on a merge request as another user with sudo', async () => {
    apiAs('hookbot')
      .post('/projects/acme%2Fweb/merge_requests/1/notes', { body: mrNote.body })
      .reply(201, mrNote);
    const created = await client.notes.createMergeRequestNote('acme/web', 1, mrNote.body, {
      sudo: 'hookbot',
    });
    expect(created.id).toBe(303);
  });

  it('never retries a comment: a 502 is ambiguous (it may have been posted)', async () => {
    const fresh = testClient();
    api().post('/projects/8/issues/43/notes', { body: 'hi' }).reply(502, { message: '502 Bad Gateway' });
    await expect(fresh.notes.createIssueNote(8, 43, 'hi')).rejects.toMatchObject({
      status: 502,
      ambiguous: true,
    });
    expect(fresh.http.stats.calls).toBe(1);
  });

  it('reports a missing body with the framework words', async () => {
    api().post('/projects/8/issues/43/notes', { body: '' }).reply(400, { error: 'body is missing' });
    await expect(client.notes.createIssueNote(8, 43, '')).rejects.toMatchObject({
      kind: 'bad_request',
      serverMessage: 'body is missing',
    });
  });

  it('refuses a note without an author', async () => {
    const { author: _author, ...withoutAuthor } = note;
    api().get('/projects/8/issues/43/notes').query({ per_page: '100' }).reply(200, [withoutAuthor]);
    await expect(collect(client.notes.listIssueNotes(8, 43))).rejects.toMatchObject({
      kind: 'invalid_response',
      serverMessage: expect.stringMatching(/^unexpected list item: author/),
    });
  });
});
