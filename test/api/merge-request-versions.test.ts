/**
 * The client's merge request versions (servers 8.12 and later, docs/api-v3.md#merge-request-versions):
 * the list (paginated on later 8.x, whole on 8.12), one version, and the 404 of a server that has no
 * such route, thrown as the ApiError it is.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import { API, api, collect, testClient, useNock } from '../helpers/nock.ts';

const MR = '/projects/3/merge_requests/12';
const sha = (c: string) => c.repeat(40);

/** A version as a later 8.x server answers it. */
const version = (id: number, head: string | null, createdAt: string) => ({
  id,
  head_commit_sha: head,
  base_commit_sha: head ? sha('b') : null,
  start_commit_sha: sha('b'),
  created_at: createdAt,
  merge_request_id: 12,
  state: head ? 'collected' : 'empty',
  real_size: head ? '2' : null,
});

describe('merge request versions client', () => {
  useNock();
  const client = testClient();

  it('lists the versions newest first, with per_page=100, a version without a head among them', async () => {
    api()
      .get(`${MR}/versions`)
      .query({ per_page: '100' })
      .reply(200, [
        version(31, sha('c'), '2016-07-26T14:44:48.926Z'),
        version(30, null, '2016-07-26T14:40:02.001Z'),
        version(29, sha('a'), '2016-07-25T09:00:00.000Z'),
      ]);
    const versions = await collect(client.mergeRequests.versions(3, 12));
    expect(versions.map((v) => [v.id, v.head_commit_sha, v.state, v.real_size])).toEqual([
      [31, sha('c'), 'collected', '2'],
      [30, null, 'empty', null],
      [29, sha('a'), 'collected', '2'],
    ]);
  });

  it('follows the pages of a later 8.x server', async () => {
    const link = (n: number) => `<${API}${MR}/versions?page=${n}&per_page=100>`;
    api()
      .get(`${MR}/versions`)
      .query({ per_page: '100' })
      .reply(200, [version(31, sha('c'), '2016-07-26T14:44:48.926Z')], {
        Link: `${link(2)}; rel="next", ${link(1)}; rel="first", ${link(2)}; rel="last"`,
      });
    api()
      .get(`${MR}/versions`)
      .query({ page: '2', per_page: '100' })
      .reply(200, [version(29, sha('a'), '2016-07-25T09:00:00.000Z')], {
        Link: `${link(1)}; rel="prev", ${link(1)}; rel="first", ${link(2)}; rel="last"`,
      });
    expect((await collect(client.mergeRequests.versions(3, 12))).map((v) => v.id)).toEqual([31, 29]);
  });

  it('reads the whole list of 8.12, which sends no pagination headers, as one page', async () => {
    api()
      .get(`${MR}/versions`)
      .query({ per_page: '100' })
      .reply(200, [version(2, sha('a'), '2016-09-22T10:00:00.000Z')]);
    expect(await collect(client.mergeRequests.versions(3, 12))).toHaveLength(1);
  });

  it('throws the 404 of a server without the route as the ApiError it is, told apart from a missing merge request', async () => {
    api().get(`${MR}/versions`).query({ per_page: '100' }).reply(404, { error: '404 Not Found' });
    const error = await collect(client.mergeRequests.versions(3, 12)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 404, kind: 'not_found', messageKey: 'error' });

    api().get(`${MR}/versions`).query({ per_page: '100' }).reply(404, { message: '404 Not found' });
    await expect(collect(client.mergeRequests.versions(3, 12))).rejects.toMatchObject({
      status: 404,
      messageKey: 'message',
    });
  });

  it('refuses a version whose head is not a string or null', async () => {
    api()
      .get(`${MR}/versions`)
      .query({ per_page: '100' })
      .reply(200, [{ ...version(31, sha('c'), '2016-07-26T14:44:48.926Z'), head_commit_sha: 42 }]);
    await expect(collect(client.mergeRequests.versions(3, 12))).rejects.toMatchObject({
      kind: 'invalid_response',
      serverMessage: expect.stringMatching(/head_commit_sha/),
    });
  });

  it('reads one version with its commits and diff, the project by its path', async () => {
    api()
      .get('/projects/acme%2Fweb/merge_requests/12/versions/31')
      .reply(200, {
        ...version(31, sha('c'), '2016-07-26T14:44:48.926Z'),
        commits: [
          {
            id: sha('c'),
            short_id: sha('c').slice(0, 11),
            title: 'Second',
            author_name: 'Alice',
            author_email: 'alice@example.com',
            created_at: '2016-07-26T17:44:29.000+03:00',
            message: 'Second',
          },
        ],
        diffs: [
          {
            old_path: 'a.txt',
            new_path: 'a.txt',
            a_mode: '100644',
            b_mode: '100644',
            diff: '@@ -1 +1 @@\n-a\n+b\n',
            new_file: false,
            renamed_file: false,
            deleted_file: false,
          },
        ],
      });
    const one = await client.mergeRequests.version('acme/web', 12, 31);
    expect(one.head_commit_sha).toBe(sha('c'));
    expect(one.commits.map((c) => c.title)).toEqual(['Second']);
    expect(one.diffs.map((d) => d.new_path)).toEqual(['a.txt']);
  });

  it('throws a version that is not there (404) as an ApiError', async () => {
    api().get(`${MR}/versions/99`).reply(404, { message: '404 Not found' });
    await expect(client.mergeRequests.version(3, 12, 99)).rejects.toMatchObject({
      status: 404,
      kind: 'not_found',
    });
  });
});
