import { describe, expect, it } from 'vitest';
import {
  latestByName,
  markRepositoryStatus,
  REPOSITORY_STATUS_MARK,
  statusTrust,
  type CommitStatus,
} from '../../src/api/statuses.ts';
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

describe("statusTrust: the bot's statuses for a repository's rules never count", () => {
  const trust = statusTrust(['ci-runner'], () => 'HookBot')!;

  it("the mark is fixed: the rule's text after it, or the mark alone", () => {
    expect(REPOSITORY_STATUS_MARK).toBe('[.hookbot.yml]');
    expect(markRepositoryStatus('tests passed')).toBe('[.hookbot.yml] tests passed');
    expect(markRepositoryStatus(undefined)).toBe('[.hookbot.yml]');
    expect(markRepositoryStatus('')).toBe('[.hookbot.yml]');
  });

  it.each<[string, string | undefined, string | null | undefined, boolean]>([
    ['the CI, any description', 'CI-Runner', 'ok', true],
    [
      'the CI, even with a text that looks like the mark (only the bot marks)',
      'ci-runner',
      '[.hookbot.yml] ok',
      true,
    ],
    ["the bot, for the operator's rules", 'hookbot', 'blocked: ...', true],
    ['the bot, no description', 'hookbot', null, true],
    ['the bot, for a repository rule (marked)', 'hookbot', '[.hookbot.yml] tests passed', false],
    ['the bot, the mark alone', 'HOOKBOT', '[.hookbot.yml]', false],
    ['a developer', 'mallory', 'ok', false],
    ['a developer, marked', 'mallory', '[.hookbot.yml] ok', false],
    ['no author', undefined, 'ok', false],
  ])('%s', (_name, author, description, counts) => {
    expect(trust.counts(author, description)).toBe(counts);
  });

  it('the mark counts for nothing even when the operator lists the bot among the authors', () => {
    const listed = statusTrust(['ci-runner', 'hookbot'], () => 'hookbot')!;
    expect(listed.counts('hookbot', '[.hookbot.yml] ok')).toBe(false);
    expect(listed.counts('hookbot', 'ok')).toBe(true);
  });

  it('before the bot knows its name, nobody is the bot', () => {
    const early = statusTrust(['ci-runner'], () => undefined)!;
    expect(early.isBot(undefined)).toBe(false);
    expect(early.isBot('hookbot')).toBe(false);
    expect(trust.isBot('hookbot')).toBe(true);
  });

  describe('the client', () => {
    useNock();
    const trusted = testClient({ statusTrust: trust });
    const posted = (id: number, name: string, author: string, description: string | null) => ({
      ...statuses[1],
      id,
      name,
      status: 'success',
      description,
      author: { ...statuses[0]!.author, username: author },
    });
    const listing = [
      posted(1, 'ci/test', 'hookbot', '[.hookbot.yml] tests passed'),
      posted(2, 'ci/lint', 'ci-runner', null),
      posted(3, 'hookbot/rules', 'hookbot', 'ready'),
      posted(4, 'ci/build', 'mallory', null),
    ];

    it("list (every reader of a requirement): neither a developer's nor the bot's marked ones", async () => {
      api()
        .get(`/projects/8/repository/commits/${SHA}/statuses`)
        .query({ per_page: '100', all: 'true' })
        .reply(200, listing);
      expect((await collect(trusted.statuses.list(8, SHA))).map((s) => s.name)).toEqual([
        'ci/lint',
        'hookbot/rules',
      ]);
    });

    it("the latest of a name among those that count: a developer's newer post hides nothing (the whole history is read)", async () => {
      api()
        .get(`/projects/8/repository/commits/${SHA}/statuses`)
        .query({ per_page: '100', all: 'true' })
        .reply(200, [
          { ...posted(2, 'ci/lint', 'ci-runner', null), status: 'failed' },
          posted(5, 'ci/lint', 'ci-runner', 'passed on a retry'),
          posted(9, 'ci/lint', 'mallory', 'mine'),
        ]);
      expect(await collect(trusted.statuses.list(8, SHA))).toMatchObject([
        { id: 5, name: 'ci/lint', status: 'success', author: { username: 'ci-runner' } },
      ]);
    });

    it("listWithOwn (the executor, before it posts): the bot's marked ones too, never a developer's", async () => {
      api()
        .get(`/projects/8/repository/commits/${SHA}/statuses`)
        .query({ per_page: '100', all: 'true' })
        .reply(200, listing);
      expect((await collect(trusted.statuses.listWithOwn(8, SHA))).map((s) => s.name)).toEqual([
        'ci/test',
        'ci/lint',
        'hookbot/rules',
      ]);
    });
  });
});
