import { describe, expect, it } from 'vitest';
import { latestByName, type CommitStatus } from '../../src/api/statuses.ts';
import created from '../fixtures/api/commit-status.json' with { type: 'json' };
import statuses from '../fixtures/api/commit-statuses.json' with { type: 'json' };
import { api, apiAs, collect, testClient, useNock } from '../helpers/nock.ts';

const SHA = '18f3e63d05582537db6d183d9d557be09e1f90c8';

describe('statuses client', () => {
  useNock();
  const client = testClient();

  it('lists the statuses of a commit with ref_name, stage, name and all', async () => {
    api()
      .get(`/projects/8/repository/commits/${SHA}/statuses`)
      .query({ per_page: '100', ref_name: 'master', stage: 'test', name: 'flay', all: 'true' })
      .reply(200, statuses.slice(1));
    const items = await collect(
      client.statuses.list(8, SHA, { ref_name: 'master', stage: 'test', name: 'flay', all: true }),
    );
    expect(items.map((s) => [s.id, s.name, s.status])).toEqual([[90, 'flay', 'pending']]);
  });

  it('lists without filters', async () => {
    api()
      .get(`/projects/8/repository/commits/${SHA}/statuses`)
      .query({ per_page: '100' })
      .reply(200, statuses);
    expect(await collect(client.statuses.list(8, SHA))).toHaveLength(2);
  });

  it('accepts the build states real servers list besides the documented five', async () => {
    const builds = ['created', 'skipped', 'manual'].map((status, i) => ({
      ...statuses[0],
      id: 100 + i,
      status,
    }));
    api().get(`/projects/8/repository/commits/${SHA}/statuses`).query({ per_page: '100' }).reply(200, builds);
    const items = await collect(client.statuses.list(8, SHA));
    expect(items.map((s) => s.status)).toEqual(['created', 'skipped', 'manual']);
  });

  it('refuses a status outside the known states', async () => {
    api()
      .get(`/projects/8/repository/commits/${SHA}/statuses`)
      .query({ per_page: '100' })
      .reply(200, [{ ...statuses[0], status: 'exploded' }]);
    await expect(collect(client.statuses.list(8, SHA))).rejects.toMatchObject({
      kind: 'invalid_response',
      serverMessage: expect.stringMatching(/^unexpected list item: status/),
    });
  });

  it('posts a status with state, ref, name, context, target_url and description', async () => {
    const body = {
      state: 'success',
      ref: 'master',
      name: 'hookbot/policy',
      context: 'hookbot/policy',
      target_url: 'https://bot.example.com/explain/93',
      description: 'All rules pass',
    } as const;
    api()
      .post(`/projects/8/statuses/${SHA}`, body)
      .reply(201, { ...created, name: 'hookbot/policy', ref: 'master', description: 'All rules pass' });
    expect(await client.statuses.create(8, SHA, body)).toMatchObject({
      id: 93,
      status: 'success',
      name: 'hookbot/policy',
    });
  });

  it('posts as another user with sudo and answers the default name', async () => {
    apiAs('ci-bot').post(`/projects/8/statuses/${SHA}`, { state: 'success' }).reply(201, created);
    expect((await client.statuses.create(8, SHA, { state: 'success' }, { sudo: 'ci-bot' })).name).toBe(
      'default',
    );
  });

  it('never retries a status: a 503 is ambiguous', async () => {
    const fresh = testClient();
    api().post(`/projects/8/statuses/${SHA}`, { state: 'running' }).reply(503);
    await expect(fresh.statuses.create(8, SHA, { state: 'running' })).rejects.toMatchObject({
      status: 503,
      ambiguous: true,
    });
    expect(fresh.http.stats.calls).toBe(1);
  });

  it('reports pending onto a pending status with the server words', async () => {
    api().post(`/projects/8/statuses/${SHA}`, { state: 'pending' }).reply(400, {
      message:
        'Cannot transition status via :enqueue from :pending (Reason(s): Status cannot transition via "enqueue")',
    });
    await expect(client.statuses.create(8, SHA, { state: 'pending' })).rejects.toMatchObject({
      status: 400,
      kind: 'bad_request',
    });
  });
});

describe('latestByName', () => {
  const status = (id: number, name: string, created_at: string, state: CommitStatus['status'] = 'success') =>
    ({ ...statuses[0], id, name, created_at, status: state }) as CommitStatus;

  it.each<[string, CommitStatus[], [number, string][]]>([
    ['nothing from nothing', [], []],
    [
      'the higher id wins, whatever the order',
      [status(7, 'lint', '2016-01-19T08:00:00.000Z'), status(9, 'lint', '2016-01-19T07:00:00.000Z')],
      [[9, 'lint']],
    ],
    [
      'history newest first keeps the first',
      [status(9, 'lint', '2016-01-19T09:00:00.000Z'), status(7, 'lint', '2016-01-19T08:00:00.000Z')],
      [[9, 'lint']],
    ],
    [
      'one per name, in the order names first appear',
      [
        status(3, 'test', '2016-01-19T08:00:00.000Z'),
        status(4, 'lint', '2016-01-19T08:00:00.000Z'),
        status(5, 'test', '2016-01-19T09:00:00.000Z'),
      ],
      [
        [5, 'test'],
        [4, 'lint'],
      ],
    ],
  ])('%s', (_name, input, expected) => {
    expect(latestByName(input).map((s) => [s.id, s.name])).toEqual(expected);
  });

  it('equal ids: keeps the entry with the later created_at', () => {
    const older = status(5, 'test', '2016-01-19T09:00:00.000Z', 'running');
    const newer = status(5, 'test', '2016-01-19T10:00:00.000Z', 'failed');
    expect(latestByName([newer, older])).toEqual([newer]);
    expect(latestByName([older, newer])).toEqual([newer]);
  });
});
