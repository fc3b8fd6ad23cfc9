import { describe, expect, it } from 'vitest';
import comment from '../fixtures/api/commit-comment.json' with { type: 'json' };
import comments from '../fixtures/api/commit-comments.json' with { type: 'json' };
import detail from '../fixtures/api/commit-detail.json' with { type: 'json' };
import diff from '../fixtures/api/commit-diff.json' with { type: 'json' };
import commits from '../fixtures/api/commits.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const SHA = '6104942438c14ec7bd21c6cd5bd995272b3faff6';

describe('commits client', () => {
  useNock();
  const client = testClient();

  it('lists the commits of a ref, per_page=100', async () => {
    api()
      .get('/projects/8/repository/commits')
      .query({ per_page: '100', ref_name: 'feature/login' })
      .reply(200, commits);
    const items = await collect(client.commits.list(8, { ref_name: 'feature/login' }));
    expect(items.map((c) => c.short_id)).toEqual(['ed899a2f4b5', '6104942438c']);
  });

  it('lists the default branch when no ref is given', async () => {
    api().get('/projects/8/repository/commits').query({ per_page: '100' }).reply(200, commits);
    expect(await collect(client.commits.list(8))).toHaveLength(2);
  });

  it('reads one commit in single form', async () => {
    api().get(`/projects/8/repository/commits/${SHA}`).reply(200, detail);
    expect(await client.commits.get(8, SHA)).toMatchObject({
      parent_ids: ['ae1d9fb46aa2b07ee9836d49862ec4e2c46fbbba'],
      status: 'running',
    });
  });

  it('reads a commit named by a branch, the name URL-encoded', async () => {
    apiAs('jane').get('/projects/8/repository/commits/feature%2Flogin').reply(200, detail);
    expect((await client.commits.get(8, 'feature/login', { sudo: 'jane' })).id).toBe(SHA);
  });

  it('reads the whole diff of a commit', async () => {
    api().get(`/projects/8/repository/commits/${SHA}/diff`).query({ per_page: '100' }).reply(200, diff);
    const entries = await client.commits.diff(8, SHA);
    expect(entries.map((d) => [d.new_path, d.a_mode, d.b_mode])).toEqual([
      ['doc/update/5.4-to-6.0.md', null, '100644'],
    ]);
  });

  it('refuses a diff entry without paths', async () => {
    api()
      .get(`/projects/8/repository/commits/${SHA}/diff`)
      .query({ per_page: '100' })
      .reply(200, [{ diff: '' }]);
    await expect(client.commits.diff(8, SHA)).rejects.toMatchObject({ kind: 'invalid_response' });
  });

  it('lists the comments on a commit', async () => {
    api()
      .get(`/projects/8/repository/commits/${SHA}/comments`)
      .query({ per_page: '100' })
      .reply(200, comments);
    const items = await collect(client.commits.listComments(8, SHA));
    expect(items.map((c) => [c.note, c.author.username])).toEqual([['this code is really nice', 'admin']]);
  });

  it('comments on a file line with note, path, line and line_type', async () => {
    api()
      .post(`/projects/8/repository/commits/${SHA}/comments`, {
        note: 'Nice picture man!',
        path: 'README.md',
        line: 11,
        line_type: 'new',
      })
      .reply(201, comment);
    const created = await client.commits.createComment(8, SHA, {
      note: 'Nice picture man!',
      path: 'README.md',
      line: 11,
      line_type: 'new',
    });
    expect(created).toMatchObject({ path: 'README.md', line: 11, line_type: 'new' });
  });

  it('never retries a commit comment: a timeout is ambiguous', async () => {
    const fresh = testClient({ timeoutMs: 50 });
    api()
      .post(`/projects/8/repository/commits/${SHA}/comments`, { note: 'hi' })
      .delay(1_000)
      .reply(201, comment);
    await expect(fresh.commits.createComment(8, SHA, { note: 'hi' })).rejects.toMatchObject({
      kind: 'timeout',
      ambiguous: true,
    });
    expect(fresh.http.stats.calls).toBe(1);
  });
});
