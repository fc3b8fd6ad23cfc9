import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { createStatusRouter } from '../../src/status/status-page.ts';
import {
  EVIL_TITLE,
  HEAD_SHA,
  HOOK_SECRET,
  MR_KEY,
  NOW,
  PARK_REASON,
  PAUSE_REASON,
  RULES_STATE,
  SWEEPS,
  TOKEN,
  WATCH_RULE,
  serveFilled,
  serveStatus,
  type Served,
  TRAIN_REMOVAL,
  TRAIN_SHA,
} from './status-fixture.ts';

/** The markup of one `<section id="...">` of the page. */
function sectionOf(page: string, id: string): string {
  const match = new RegExp(`<section id="${id}">([\\s\\S]*?)</section>`).exec(page);
  if (!match?.[1]) throw new Error(`the page has no section "${id}"`);
  return match[1];
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;

describe('GET /status: every section shows what the store holds', () => {
  let served: Served;
  let page: string;
  let response: Response;
  beforeAll(async () => {
    served = await serveFilled();
    response = await fetch(`${served.url}/status`);
    page = await response.text();
  });
  afterAll(() => served.close());

  it('answers 200 with an HTML document that needs no build step', () => {
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(page).not.toMatch(/<script/i);
  });

  const sections: { name: string; id: string; shows: string[] }[] = [
    {
      name: 'recent deliveries: kind, outcome, status, when; and the inbox',
      id: 'deliveries',
      shows: [
        'merge_request',
        'accepted',
        '202',
        'unauthorized',
        '401',
        '2016-08-12 15:29:00 UTC',
        '1 accepted delivery is waiting',
      ],
    },
    {
      name: 'decisions: item, rules matched, plan, execution outcome, explanation',
      id: 'decisions',
      shows: [
        'acme/web !7',
        MR_KEY,
        'merge_request.update',
        '<strong>policy-status</strong>',
        '<code>statuses.create</code>',
        'the MR follows the policy',
        'Outcome: 1 failed',
        'statuses.create policy=success',
        '<details><summary>Explanation</summary><pre>',
        'execution:',
      ],
    },
    {
      name: 'merge watch: the MR, its rule, the statuses it waits for, head sha, since',
      id: 'merge-watch',
      shows: [
        'acme/web',
        '42',
        WATCH_RULE,
        'ci/build',
        'ci/test',
        `title="${HEAD_SHA}"`,
        HEAD_SHA.slice(0, 12),
        '2016-08-12 15:10:00 UTC',
        '20 min ago',
      ],
    },
    {
      name: 'merge queue: each queue in order, with where each merge request stands',
      id: 'merge-queue',
      shows: [
        '!9',
        '!10',
        'merge_request:5:50',
        'position 1 of 2 in the default queue for master; waiting for ci/test on 4f2e9c1 (timeout in 1500 s)',
        'position 2 of 2 in the default queue for master; waiting for acme/web!9 ahead',
      ],
    },
    {
      name: 'merge trains: each car, what it waits for and since when, the estimate, the last removals',
      id: 'merge-queue',
      shows: [
        '!20',
        'car 1 of the merge train (!20); waiting for ci/test on c0ffee1 for 120 s',
        'hookbot/train/master/train/20',
        'in 1 min',
        'Last removals',
        TRAIN_REMOVAL,
      ],
    },
    {
      name: 'parked actions with their reason',
      id: 'parked',
      shows: [
        'merge_request:5:43',
        'automerge',
        'mergeRequests.merge',
        PARK_REASON,
        '405 Method Not Allowed',
      ],
    },
    { name: 'paused rules with their reason', id: 'paused', shows: ['close-stale', PAUSE_REASON] },
    {
      name: 'next sweep times',
      id: 'sweeps',
      shows: [...SWEEPS, 'in 45 s', 'in 50 min', '15 s ago', 'not scheduled'],
    },
    {
      name: 'rules in force, when loaded, and the load errors',
      id: 'rules',
      shows: [
        'default.yml',
        'acme/web.yml',
        '1 h ago',
        'The last change was refused',
        'rules/acme/web.yml:12:9: unknown action &quot;coment&quot;',
      ],
    },
    {
      name: 'store stats',
      id: 'store',
      shows: ['Deliveries waiting', 'Merge requests watched', 'Parked actions', 'Paused rules'],
    },
  ];

  for (const { name, id, shows } of sections)
    it(name, () => {
      const html = sectionOf(page, id);
      for (const text of shows) expect(html, text).toContain(text);
    });

  it('puts what needs a look (refused rules, parked actions, paused rules) at the top', () => {
    const header = page.slice(page.indexOf('<body>'), page.indexOf('<main>'));
    expect(header).toContain('The last rules change was refused');
    expect(header).toContain('1 parked action waits for an operator');
    expect(header).toContain('1 rule is paused');
  });

  it('escapes every value: a title with markup shows as text', () => {
    expect(page).not.toContain(EVIL_TITLE);
    expect(page).not.toContain('<script>');
    expect(page).not.toContain('<b>logout</b>');
    expect(sectionOf(page, 'decisions')).toContain(
      '&lt;script&gt;window.pwned = 1&lt;/script&gt; Fix &quot;login&quot; &amp; &lt;b&gt;logout&lt;/b&gt;',
    );
  });

  it('never shows a known secret (decision text, call error, parked error, rules problem)', () => {
    expect(page).not.toContain(TOKEN);
    expect(page).not.toContain(HOOK_SECRET);
    expect(sectionOf(page, 'decisions')).toContain('with token [REDACTED]');
    expect(sectionOf(page, 'decisions')).toContain('401 Unauthorized: token [REDACTED] is not valid');
    expect(sectionOf(page, 'parked')).toContain('PRIVATE-TOKEN [REDACTED]');
    expect(sectionOf(page, 'rules')).toContain('near [REDACTED]');
  });

  it('allows only its own stylesheet: no script, nothing loaded, no framing', () => {
    const csp = response.headers.get('content-security-policy') ?? '';
    const css = /<style>([\s\S]*?)<\/style>/.exec(page)?.[1] ?? '';
    const hash = createHash('sha256').update(css).digest('base64');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`style-src 'sha256-${hash}'`);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('GET /status.json', () => {
  let served: Served;
  let body: any;
  let text: string;
  beforeAll(async () => {
    served = await serveFilled();
    const response = await fetch(`${served.url}/status.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    text = await response.text();
    body = JSON.parse(text);
  });
  afterAll(() => served.close());

  it('holds each train car, its estimate and the last removals', () => {
    const car = body.mergeQueue.find((q: any) => q.iid === 20);
    expect(car.car).toEqual({
      position: 1,
      iids: [20],
      branch: 'hookbot/train/master/train/20',
      sha: TRAIN_SHA,
      waitingFor: ['ci/test'],
      since: NOW - 2 * 60_000,
    });
    expect(car.estimatedLandAt).toBe(NOW + 60_000);
    expect(body.queueRemovals).toEqual([
      expect.objectContaining({ iid: 21, queue: 'train', reason: TRAIN_REMOVAL, at: NOW - 4 * 60_000 }),
    ]);
  });

  it('a landing car waits for no status: it is landing (issue 37)', async () => {
    const store = createMemoryStore({ now: () => NOW });
    await store.open();
    const car = {
      id: '30-aaaaaaa-1',
      position: 1,
      base: 'a'.repeat(40),
      members: ['merge_request:6:70'],
      iids: [30],
      heads: ['d'.repeat(40)],
      branch: 'hookbot/train/master/default/30',
      date: Math.floor(NOW / 1000) - 300,
      identity: { name: 'hookbot', email: 'hookbot@example.com' },
      sha: TRAIN_SHA,
      pushedAt: NOW - 5 * 60_000,
      landing: NOW - 1_000,
    };
    await store.enqueue({
      itemKey: 'merge_request:6:70',
      project: 'acme/api',
      projectId: 6,
      mrId: 70,
      iid: 30,
      targetBranch: 'master',
      queue: 'default',
      rule: 'queue-green',
      priority: 0,
      enqueuedAt: NOW - 10 * 60_000,
      required: ['ci/test', 'ci/lint'],
      statusTimeoutMs: 30 * 60_000,
      maxUpdates: 3,
      updates: 0,
      depth: 2,
      car,
    });
    const alone = await serveStatus({
      store,
      rules: { state: () => RULES_STATE },
      sweeps: [],
      now: () => NOW,
    });
    try {
      const json = (await (await fetch(`${alone.url}/status.json`)).json()) as any;
      expect(json.mergeQueue[0].car).toMatchObject({ landing: NOW - 1_000, waitingFor: [] });
    } finally {
      await alone.close();
    }
  });

  it('holds the same data as the page', () => {
    expect(body.now).toBe(NOW);
    expect(body.deliveries.recent.map((d: any) => d.outcome)).toEqual(['unauthorized', 'accepted']);
    expect(body.deliveries.pending).toBe(1);
    expect(body.decisions).toHaveLength(1);
    expect(body.decisions[0]).toMatchObject({
      itemKey: MR_KEY,
      item: { kind: 'merge_request', id: 42, iid: 7, project: 'acme/web', title: EVIL_TITLE },
      matched: ['policy-status'],
      plan: [{ rule: 'policy-status', action: 'status', op: 'statuses.create' }],
      outcome: '1 failed',
    });
    expect(body.mergeWatch).toEqual([
      {
        itemKey: MR_KEY,
        project: 'acme/web',
        mrId: 42,
        rule: WATCH_RULE,
        headSha: HEAD_SHA,
        required: ['ci/build', 'ci/test'],
        since: NOW - 20 * 60_000,
        explain: `explain/acme%2Fweb/mr/7?rule=${WATCH_RULE}`,
      },
    ]);
    expect(body.parked).toEqual([
      expect.objectContaining({
        id: 'act-2',
        rule: 'automerge',
        op: 'mergeRequests.merge',
        reason: PARK_REASON,
      }),
    ]);
    expect(body.pausedRules).toEqual([
      expect.objectContaining({ rule: 'close-stale', reason: PAUSE_REASON }),
    ]);
    expect(body.sweeps.find((s: any) => s.name === 'merge_watch')).toEqual({
      name: 'merge_watch',
      nextRun: NOW + 45_000,
      lastSuccess: NOW - 15_000,
    });
    expect(body.rules).toMatchObject({ files: ['default.yml', 'acme/web.yml'], refused: true });
    expect(body.stats).toMatchObject({ inbox: 1, watched: 1, parked: 1, pausedRules: 1 });
  });

  it('never holds a known secret either', () => {
    expect(text).not.toContain(TOKEN);
    expect(body.decisions[0].text).toContain('with token [REDACTED]');
    expect(body.parked[0].lastError).toContain('PRIVATE-TOKEN [REDACTED]');
  });
});

describe('an empty bot', () => {
  let served: Served;
  beforeAll(async () => {
    const store = createMemoryStore();
    await store.open();
    served = await serveStatus({
      store,
      rules: { state: () => ({ files: [], problems: [], refused: false }) },
      sweeps: ['merge_watch'],
    });
  });
  afterAll(() => served.close());

  it('says so in each section instead of showing empty tables', async () => {
    const page = await (await fetch(`${served.url}/status`)).text();
    const expected: [string, string][] = [
      ['deliveries', 'No delivery since the bot started.'],
      ['decisions', 'No decision recorded yet.'],
      ['merge-watch', 'No merge request is waiting to be merged.'],
      ['parked', 'No parked action.'],
      ['paused', 'No rule is paused.'],
      ['sweeps', 'not scheduled'],
      ['rules', 'No rules loaded.'],
    ];
    for (const [id, text] of expected) expect(sectionOf(page, id), id).toContain(text);
  });
});

describe('basic authentication', () => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFilled({ auth: { username: 'ops', password: 'pa:ss-word-9' } });
  });
  afterAll(() => served.close());

  const cases: { name: string; authorization?: string; status: number }[] = [
    { name: 'no credentials', status: 401 },
    {
      name: 'the right name and password (with a colon in it)',
      authorization: basic('ops', 'pa:ss-word-9'),
      status: 200,
    },
    { name: 'a wrong password', authorization: basic('ops', 'pa:ss-word-8'), status: 401 },
    { name: 'a wrong name', authorization: basic('root', 'pa:ss-word-9'), status: 401 },
    { name: 'the password with a prefix cut off', authorization: basic('ops', 'pa:ss'), status: 401 },
    { name: 'empty credentials', authorization: basic('', ''), status: 401 },
    { name: 'another scheme', authorization: 'Bearer pa:ss-word-9', status: 401 },
    {
      name: 'base64 without a colon',
      authorization: `Basic ${Buffer.from('ops').toString('base64')}`,
      status: 401,
    },
  ];

  for (const path of ['/status', '/status.json'])
    for (const { name, authorization, status } of cases)
      it(`${path}: ${name} → ${status}`, async () => {
        const response = await fetch(`${served.url}${path}`, {
          headers: authorization ? { authorization } : {},
        });
        expect(response.status).toBe(status);
        const text = await response.text();
        if (status === 401) {
          expect(response.headers.get('www-authenticate')).toBe('Basic realm="hookbot"');
          expect(text).not.toContain('acme/web');
        } else {
          expect(text).toContain('acme/web');
        }
      });

  it('leaves the other routes of the port alone', async () => {
    const response = await fetch(`${served.url}/healthz`);
    expect(response.status).toBe(200);
  });

  it('never shows the status password on the page', async () => {
    const page = await (
      await fetch(`${served.url}/status`, { headers: { authorization: basic('ops', 'pa:ss-word-9') } })
    ).text();
    expect(page).not.toContain('pa:ss-word-9');
  });

  it('refuses to start with a name but no password', () => {
    const store = createMemoryStore();
    expect(() =>
      createStatusRouter({
        store,
        rules: { state: () => ({ files: [], problems: [], refused: false }) },
        sweeps: [],
        auth: { username: 'ops', password: '' },
      }),
    ).toThrow(/needs both a username and a password/);
  });
});

describe('GET /status: repository rules', () => {
  it('lists each project with a .hookbot.yml: its rules in force, and a refused change with every problem', async () => {
    const served = await serveFilled({
      repositoryRules: () => [
        { project: 'acme/web', blobId: 'b1', rules: 2, loadedAt: NOW - 60_000, problems: [], checkedAt: NOW },
        {
          project: 'acme/helpdesk',
          blobId: 'b2',
          rules: 1,
          loadedAt: NOW - 3_600_000,
          problems: ['4:1: YAML: Tabs are not allowed as indentation', `7:9: <b>bad</b> ${TOKEN}`],
          problemCommit: HEAD_SHA,
          checkedAt: NOW,
        },
      ],
    });
    try {
      const page = await (await fetch(`${served.url}/status`)).text();
      const rules = sectionOf(page, 'rules');
      expect(rules).toContain('<h3>Repository rules</h3>');
      expect(rules).toContain('<code>acme/web</code>: 2 rules in force');
      expect(rules).toContain(
        `The change in ${HEAD_SHA.slice(0, 8)} was refused (hookbot/config failed); the last good rules stay in force:`,
      );
      expect(rules).toContain('<li><code>4:1: YAML: Tabs are not allowed as indentation</code></li>');
      expect(rules).toContain('&lt;b&gt;bad&lt;/b&gt;');
      expect(page).not.toContain(TOKEN);
      const json = (await (await fetch(`${served.url}/status.json`)).json()) as any;
      expect(json.repositoryRules.map((entry: { project: string }) => entry.project)).toEqual([
        'acme/web',
        'acme/helpdesk',
      ]);
    } finally {
      await served.close();
    }
  });

  it('says so when repository rules are on and no project has a file yet; nothing when they are off', async () => {
    const on = await serveFilled({ repositoryRules: () => [] });
    const off = await serveFilled();
    try {
      expect(await (await fetch(`${on.url}/status`)).text()).toContain(
        'No project read so far has a <code>.hookbot.yml</code>.',
      );
      expect(await (await fetch(`${off.url}/status`)).text()).not.toContain('Repository rules');
    } finally {
      await on.close();
      await off.close();
    }
  });
});
