import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import issue from '../fixtures/api/issue.json' with { type: 'json' };
import commits from '../fixtures/api/merge-request-commits.json' with { type: 'json' };
import diff from '../fixtures/api/merge-request-diff.json' with { type: 'json' };
import mergeRequest from '../fixtures/api/merge-request.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const MR = '/projects/3/merge_requests/1';
const merged = { ...mergeRequest, state: 'merged', merge_status: 'can_be_merged' };
const armed = { ...mergeRequest, merge_when_build_succeeds: true };

describe('merge requests client', () => {
  useNock();
  const client = testClient();

  it('lists merge requests with iid, state, order_by and sort, per_page=100', async () => {
    api()
      .get('/projects/3/merge_requests')
      .query({ per_page: '100', iid: '1', state: 'merged', order_by: 'updated_at', sort: 'asc' })
      .reply(200, [merged]);
    const items = await collect(
      client.mergeRequests.list(3, { iid: 1, state: 'merged', order_by: 'updated_at', sort: 'asc' }),
    );
    expect(items.map((mr) => [mr.id, mr.state])).toEqual([[1, 'merged']]);
  });

  it('reads one merge request by its global id', async () => {
    api().get(MR).reply(200, mergeRequest);
    expect(await client.mergeRequests.get(3, 1)).toMatchObject({
      iid: 1,
      source_branch: 'test1',
      labels: ['community', 'docs'],
      sha: '8888888888888888888888888888888888888888',
    });
  });

  it('turns project ids sent as numeric strings into numbers', async () => {
    api()
      .get(MR)
      .reply(200, { ...mergeRequest, source_project_id: '4', target_project_id: '3' });
    const mr = await client.mergeRequests.get(3, 1);
    expect([mr.source_project_id, mr.target_project_id]).toEqual([4, 3]);
  });

  it('refuses a project id that is not a number at all', async () => {
    api()
      .get(MR)
      .reply(200, { ...mergeRequest, source_project_id: 'acme/web' });
    await expect(client.mergeRequests.get(3, 1)).rejects.toMatchObject({
      kind: 'invalid_response',
      serverMessage: expect.stringMatching(/^unexpected answer: source_project_id/),
    });
  });

  it('acts as another user with sudo', async () => {
    apiAs('jane').get(MR).reply(200, mergeRequest);
    expect((await client.mergeRequests.get(3, 1, { sudo: 'jane' })).id).toBe(1);
  });

  it('lists the commits of a merge request', async () => {
    api().get(`${MR}/commits`).query({ per_page: '100' }).reply(200, commits);
    const items = await collect(client.mergeRequests.commits(3, 1));
    expect(items.map((c) => c.short_id)).toEqual(['ed899a2f4b5', '6104942438c']);
  });

  it('reads the changes form: the merge request plus its diff entries', async () => {
    api()
      .get(`${MR}/changes`)
      .reply(200, { ...mergeRequest, changes: diff });
    const changes = await client.mergeRequests.changes(3, 1);
    expect(changes.title).toBe('test1');
    expect(changes.changes.map((c) => [c.new_path, c.new_file])).toEqual([
      ['VERSION', false],
      ['docs/deploy.md', true],
    ]);
  });

  it('creates a merge request (200) with labels comma-separated', async () => {
    api()
      .post('/projects/3/merge_requests', {
        source_branch: 'test1',
        target_branch: 'master',
        title: 'test1',
        description: 'fixed login page css paddings',
        target_project_id: 3,
        labels: 'community,docs',
      })
      .reply(200, mergeRequest);
    const created = await client.mergeRequests.create(3, {
      source_branch: 'test1',
      target_branch: 'master',
      title: 'test1',
      description: 'fixed login page css paddings',
      target_project_id: 3,
      labels: ['community', 'docs'],
    });
    expect(created.id).toBe(1);
  });

  it.each([
    [
      'update',
      { title: 'x', labels: ['a', 'b'], assignee_id: null },
      { title: 'x', labels: 'a,b', assignee_id: null },
    ],
    ['close', undefined, { state_event: 'close' }],
    ['reopen', undefined, { state_event: 'reopen' }],
  ] as const)('%s sends PUT with %j', async (method, edit, body) => {
    api()
      .put(MR, body)
      .reply(200, { ...mergeRequest, state: method === 'close' ? 'closed' : 'opened' });
    const result =
      method === 'update'
        ? await client.mergeRequests.update(3, 1, edit ?? {})
        : await client.mergeRequests[method](3, 1);
    expect(result.state).toBe(method === 'close' ? 'closed' : 'opened');
  });

  it('never retries an update that merges (state_event=merge): a 502 is ambiguous', async () => {
    api().put(MR, { state_event: 'merge' }).reply(502, { message: '502 Bad Gateway' });
    const fresh = testClient();
    await expect(fresh.mergeRequests.update(3, 1, { state_event: 'merge' })).rejects.toMatchObject({
      status: 502,
      ambiguous: true,
    });
    expect(fresh.http.stats.calls).toBe(1);
  });

  it('retries a close after a 502 (closing twice is harmless)', async () => {
    api().put(MR, { state_event: 'close' }).reply(502, { message: '502 Bad Gateway' });
    api()
      .put(MR, { state_event: 'close' })
      .reply(200, { ...mergeRequest, state: 'closed' });
    expect((await client.mergeRequests.close(3, 1)).state).toBe('closed');
  });

  it('deletes a merge request', async () => {
    api().delete(MR).reply(200, mergeRequest);
    await expect(client.mergeRequests.remove(3, 1)).resolves.toBeUndefined();
  });

  it('reports deleting an absent merge request as not_found', async () => {
    api().delete(MR).reply(404, { message: '404 Not found' });
    await expect(client.mergeRequests.remove(3, 1)).rejects.toMatchObject({ status: 404, kind: 'not_found' });
  });

  it('lists the issues that merging would close', async () => {
    api().get(`${MR}/closes_issues`).query({ per_page: '100' }).reply(200, [issue]);
    const items = await collect(client.mergeRequests.closesIssues(3, 1));
    expect(items.map((i) => i.id)).toEqual([43]);
  });

  it('subscribes (201) and reports already-subscribed (304) as unchanged', async () => {
    api()
      .post(`${MR}/subscription`)
      .reply(201, { ...mergeRequest, subscribed: true });
    api().post(`${MR}/subscription`).reply(304);
    expect(await client.mergeRequests.subscribe(3, 1)).toMatchObject({
      changed: true,
      value: { subscribed: true },
    });
    expect(await client.mergeRequests.subscribe(3, 1)).toEqual({ changed: false });
  });

  it('unsubscribes (200) and reports not-subscribed (304) as unchanged', async () => {
    api().delete(`${MR}/subscription`).reply(200, mergeRequest);
    api().delete(`${MR}/subscription`).reply(304);
    expect((await client.mergeRequests.unsubscribe(3, 1)).changed).toBe(true);
    expect(await client.mergeRequests.unsubscribe(3, 1)).toEqual({ changed: false });
  });
});

describe('merge requests client: merge', () => {
  useNock();

  it('sends PUT .../merge with sha, message, branch removal and merge_when_build_succeeds (never the misspelt name)', async () => {
    const client = testClient();
    api()
      .put(`${MR}/merge`, {
        sha: mergeRequest.sha,
        merge_commit_message: 'Merge branch test1',
        should_remove_source_branch: true,
        merge_when_build_succeeds: true,
      })
      .reply(200, armed);
    const result = await client.mergeRequests.merge(3, 1, {
      sha: mergeRequest.sha,
      merge_commit_message: 'Merge branch test1',
      should_remove_source_branch: true,
      merge_when_build_succeeds: true,
    });
    expect(result.outcome).toBe('armed');
  });

  it('merges as another user with sudo', async () => {
    const client = testClient();
    apiAs('root').put(`${MR}/merge`, {}).reply(200, merged);
    expect(await client.mergeRequests.merge(3, 1, {}, { sudo: 'root' })).toMatchObject({ outcome: 'merged' });
  });

  type Answer = { status: number; body: Record<string, unknown> };
  it.each<[string, Answer, Record<string, unknown>]>([
    ['200 merged -> merged', { status: 200, body: merged }, { outcome: 'merged', mr: { state: 'merged' } }],
    [
      '200 opened with merge_when_build_succeeds -> armed',
      { status: 200, body: armed },
      { outcome: 'armed', mr: { state: 'opened', merge_when_build_succeeds: true } },
    ],
    [
      '200 still opened and not armed (the merge failed on the server) -> not_merged',
      { status: 200, body: mergeRequest },
      { outcome: 'not_merged', mr: { state: 'opened', merge_when_build_succeeds: false } },
    ],
    [
      '200 locked (merge in progress) -> not_merged',
      { status: 200, body: { ...mergeRequest, state: 'locked' } },
      { outcome: 'not_merged', mr: { state: 'locked' } },
    ],
    [
      '405 Branch cannot be merged (docs/api-v3.md#merge-requests) -> conflict',
      { status: 405, body: { message: 'Branch cannot be merged' } },
      { outcome: 'conflict', message: 'Branch cannot be merged' },
    ],
    [
      '406 Branch cannot be merged (real 8.3+ servers) -> conflict',
      { status: 406, body: { message: 'Branch cannot be merged' } },
      { outcome: 'conflict', message: 'Branch cannot be merged' },
    ],
    [
      '405 Method Not Allowed (closed, merged or WIP) -> not_mergeable',
      { status: 405, body: { message: '405 Method Not Allowed' } },
      { outcome: 'not_mergeable', message: '405 Method Not Allowed' },
    ],
    [
      '409 sha does not match the source head -> sha_mismatch',
      {
        status: 409,
        body: {
          message: 'SHA does not match HEAD of source branch: 9999999999999999999999999999999999999999',
        },
      },
      {
        outcome: 'sha_mismatch',
        message: 'SHA does not match HEAD of source branch: 9999999999999999999999999999999999999999',
      },
    ],
  ])('%s', async (_name, answer, expected) => {
    const client = testClient();
    api().put(`${MR}/merge`, { sha: mergeRequest.sha }).reply(answer.status, answer.body);
    expect(await client.mergeRequests.merge(3, 1, { sha: mergeRequest.sha })).toMatchObject(expected);
    expect(client.http.stats.calls).toBe(1);
  });

  it.each([
    ['401 Unauthorized', 401, { message: '401 Unauthorized' }, 'unauthorized'],
    ['403 Forbidden', 403, { message: '403 Forbidden' }, 'forbidden'],
    ['404 Not found', 404, { message: '404 Not found' }, 'not_found'],
  ] as const)('%s throws an ApiError', async (_name, status, body, kind) => {
    const client = testClient();
    api().put(`${MR}/merge`, {}).reply(status, body);
    const failure = await client.mergeRequests.merge(3, 1).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ status, kind, ambiguous: false });
    expect(client.http.stats.calls).toBe(1);
  });

  it('a 502 is ambiguous and is never retried', async () => {
    const client = testClient();
    api().put(`${MR}/merge`, {}).reply(502, { message: '502 Bad Gateway' });
    const result = await client.mergeRequests.merge(3, 1);
    expect(result).toMatchObject({ outcome: 'ambiguous', error: { status: 502, kind: 'server' } });
    expect(client.http.stats.calls).toBe(1);
  });

  it('a socket timeout is ambiguous and is never retried', async () => {
    const client = testClient({ timeoutMs: 50 });
    api().put(`${MR}/merge`, {}).delay(1_000).reply(200, merged);
    const result = await client.mergeRequests.merge(3, 1);
    expect(result).toMatchObject({ outcome: 'ambiguous', error: { kind: 'timeout', ambiguous: true } });
    expect(client.http.stats.calls).toBe(1);
  });

  it('a connection reset after sending is ambiguous and is never retried', async () => {
    const client = testClient();
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    api().put(`${MR}/merge`, {}).replyWithError(reset);
    const result = await client.mergeRequests.merge(3, 1);
    expect(result).toMatchObject({ outcome: 'ambiguous', error: { kind: 'network', ambiguous: true } });
    expect(client.http.stats.calls).toBe(1);
  });

  it('a 200 whose body is not a merge request is ambiguous (the server did something)', async () => {
    const client = testClient();
    api().put(`${MR}/merge`, {}).reply(200, { id: 'x' });
    const result = await client.mergeRequests.merge(3, 1);
    expect(result).toMatchObject({ outcome: 'ambiguous', error: { kind: 'invalid_response', status: 200 } });
  });
});

describe('merge requests client: cancel merge when build succeeds', () => {
  useNock();
  const CANCEL = `${MR}/cancel_merge_when_build_succeeds`;
  const cancelled = { ...mergeRequest, merge_when_build_succeeds: false };

  it('uses POST, as real servers route it', async () => {
    const client = testClient();
    api().post(CANCEL).reply(200, cancelled);
    expect(await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).toMatchObject({
      changed: true,
      value: { merge_when_build_succeeds: false },
    });
    expect(client.http.stats.calls).toBe(1);
  });

  it('falls back to PUT when POST is an unknown route (grape 404), then goes straight to PUT', async () => {
    const client = testClient();
    api().post(CANCEL).reply(404, { error: '404 Not Found' });
    api().put(CANCEL).reply(200, cancelled);
    api().put(CANCEL).reply(406, { message: '406 Not Acceptable' });
    expect((await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).changed).toBe(true);
    expect(await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).toEqual({ changed: false });
    expect([...client.http.stats.byRoute]).toEqual([
      [`POST /projects/:id/merge_requests/:merge_request_id/cancel_merge_when_build_succeeds`, 1],
      [`PUT /projects/:id/merge_requests/:merge_request_id/cancel_merge_when_build_succeeds`, 2],
    ]);
  });

  it('falls back to PUT on grape 405 for a path known only for other methods (Allow: PUT)', async () => {
    const client = testClient();
    api().post(CANCEL).reply(405, { error: '405 Not Allowed' }, { Allow: 'OPTIONS, PUT' });
    api().put(CANCEL).reply(200, cancelled);
    expect((await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).changed).toBe(true);
  });

  it('throws not_allowed on 405 Method Not Allowed (already merged or closed), without trying PUT', async () => {
    const client = testClient();
    api().post(CANCEL).reply(405, { message: '405 Method Not Allowed' });
    await expect(client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).rejects.toMatchObject({
      status: 405,
      kind: 'not_allowed',
    });
    expect(client.http.stats.calls).toBe(1);
  });

  it('reports 406 (not set to merge when the build succeeds) as unchanged', async () => {
    const client = testClient();
    api().post(CANCEL).reply(406, { message: '406 Not Acceptable' });
    expect(await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).toEqual({ changed: false });
  });

  it('throws a 404 about the project itself without trying PUT', async () => {
    const client = testClient();
    api().post(CANCEL).reply(404, { message: '404 Project Not Found' });
    await expect(client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).rejects.toMatchObject({
      kind: 'not_found',
      serverMessage: '404 Project Not Found',
    });
    expect(client.http.stats.calls).toBe(1);
  });

  it('throws the first answer when neither method is routed, and keeps trying POST first', async () => {
    const client = testClient();
    api().post(CANCEL).reply(404, { error: '404 Not Found' });
    api().put(CANCEL).reply(404, { error: '404 Not Found' });
    api().post(CANCEL).reply(200, cancelled);
    await expect(client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).rejects.toMatchObject({
      method: 'POST',
      kind: 'not_found',
    });
    expect((await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1)).changed).toBe(true);
  });

  it('cancels as another user with sudo, on both routes', async () => {
    const client = testClient();
    apiAs('jane').post(CANCEL).reply(404, { error: '404 Not Found' });
    apiAs('jane').put(CANCEL).reply(200, cancelled);
    expect((await client.mergeRequests.cancelMergeWhenBuildSucceeds(3, 1, { sudo: 'jane' })).changed).toBe(
      true,
    );
  });
});
