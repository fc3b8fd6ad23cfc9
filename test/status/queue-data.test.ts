/**
 * The queue page's data (src/status/queue-data.ts) and its HTML, from store entries as the drivers
 * leave them: car numbers of now, one row per car, each car's build state, estimates never in the
 * past, trouble on the queue, a serial queue's order, the last removals.
 */
import { describe, expect, it } from 'vitest';
import type { QueueEntry, TrainCar } from '../../src/state/store.ts';
import { collectQueues, type QueuePageData } from '../../src/status/queue-data.ts';
import { renderQueuePage } from '../../src/status/render-queue.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { DECISION, MR_KEY, NOW, RULES_STATE, serveStatus } from './status-fixture.ts';

const MIN = 60_000;

function entry(iid: number, extra: Partial<QueueEntry> = {}): QueueEntry {
  return {
    itemKey: `merge_request:5:${iid + 40}`,
    project: 'acme/web',
    projectId: 5,
    mrId: iid + 40,
    iid,
    targetBranch: 'release-2016_08',
    queue: 'candidates',
    rule: 'train',
    priority: 0,
    enqueuedAt: NOW - 30 * MIN + iid,
    required: ['ci/test'],
    statusTimeoutMs: 20 * MIN,
    maxUpdates: 3,
    updates: 0,
    depth: 3,
    batch: 2,
    ...extra,
  };
}

function car(position: number, iids: number[], extra: Partial<TrainCar> = {}): TrainCar {
  return {
    id: `${iids[0]}-base-${position}`,
    position,
    base: `${position}`.repeat(40),
    members: iids.map((iid) => `merge_request:5:${iid + 40}`),
    iids,
    heads: iids.map(() => 'd'.repeat(40)),
    branch: `hookbot/train/release-2016_08/candidates/${iids[0]}`,
    date: Math.floor((NOW - 10 * MIN) / 1000),
    identity: { name: 'hookbot', email: 'hookbot@example.com' },
    sha: `${position}`.repeat(7).padEnd(40, 'f'),
    pushedAt: NOW - 4 * MIN,
    ...extra,
  };
}

/** Car 1 landed and left the store: what was built as car 2 (a batch of 2) is car 1 now. */
function train(buildMs?: number): QueueEntry[] {
  const ms = buildMs === undefined ? {} : { trainCiMs: buildMs };
  const front = car(2, [7, 8]);
  const passed = car(3, [9], { checked: { state: 'passed', at: NOW - MIN } });
  return [
    entry(7, { car: front, ...ms }),
    entry(8, { car: front, ...ms }),
    entry(9, { car: passed, ...ms }),
    entry(10, ms),
    entry(11, ms),
    entry(12, ms),
    entry(13, { ...ms, left: { at: NOW - 2 * MIN, sha: 'e'.repeat(40), reason: 'ci/test failed on car 1' } }),
    entry(14, {
      ...ms,
      left: { at: NOW - 9 * MIN, sha: 'e'.repeat(40), reason: 'conflicts with the target' },
    }),
  ];
}

const read = (entries: QueueEntry[], extra: Partial<Parameters<typeof collectQueues>[0]> = {}) =>
  collectQueues({ entries, now: NOW, ...extra });

describe('the queue page data of a merge train', () => {
  it('numbers the cars as of now, one row per car, each with its members in order', () => {
    const [queue] = read(train(3 * MIN)).queues;
    expect(queue).toMatchObject({ kind: 'train', depth: 3, batch: 2, size: 6, buildMs: 3 * MIN });
    expect(queue!.cars.map((c) => [c.number, c.builtAs, c.members.map((m) => m.ref)])).toEqual([
      [1, 2, ['acme/web!7', 'acme/web!8']],
      [2, 3, ['acme/web!9']],
    ]);
    expect(queue!.cars[0]).toMatchObject({
      branch: 'hookbot/train/release-2016_08/candidates/7',
      base: '2'.repeat(40),
    });
    expect(queue!.waiting.map((w) => [w.member.position, w.member.ref])).toEqual([
      [4, 'acme/web!10'],
      [5, 'acme/web!11'],
      [6, 'acme/web!12'],
    ]);
  });

  it('shows the window of depth: auto as it stands, with its bounds, on the data and the page', () => {
    const auto = train(3 * MIN).map(({ depth: _depth, ...e }) => ({
      ...e,
      depthAuto: { min: 2, max: 8 },
      trainWindow: 5,
    }));
    const data = read(auto);
    expect(data.queues[0]).toMatchObject({ kind: 'train', depth: 5, depthAuto: { min: 2, max: 8 } });
    expect(renderQueuePage(data)).toContain('train · depth auto 5 (2..8) · batch 2');
  });

  it("tells each car's build: running with what it waits for and its timeout, passed waiting for the cars ahead", () => {
    const [queue] = read(train(3 * MIN)).queues;
    const [front, behind] = queue!.cars;
    expect(front).toMatchObject({
      state: 'running',
      waitingFor: ['ci/test'],
      since: NOW - 4 * MIN,
      timeoutAt: NOW + 16 * MIN,
    });
    expect(behind).toMatchObject({ state: 'passed', waitingFor: [], since: NOW - MIN });
    expect(behind!.stateText).toBe('passed: waiting for the car ahead');
    expect(behind).not.toHaveProperty('timeoutAt');
  });

  it('a car not pushed yet has not started; a failed one does not land as built; a landing one waits for nothing', () => {
    const entries = [
      entry(7, { car: car(1, [7], { landing: NOW - 1_000 }), trainCiMs: MIN }),
      entry(8, { car: car(2, [8], { checked: { state: 'failed', at: NOW - 30_000, failed: ['ci/test'] } }) }),
      entry(9, { car: car(3, [9], { sha: undefined, pushedAt: undefined }) }),
    ];
    const [queue] = read(entries).queues;
    expect(queue!.cars.map((c) => [c.state, c.waitingFor])).toEqual([
      ['landing', []],
      ['failed', []],
      ['not_started', ['ci/test']],
    ]);
    expect(queue!.cars[0]!.estimate).toEqual({
      kind: 'any_moment',
      at: NOW,
      text: 'any moment: landing now',
    });
    expect(queue!.cars[1]!.failed).toEqual(['ci/test']);
    expect(queue!.cars[1]!.estimate.kind).toBe('none');
    // Behind a failed car everything is built again: after the landing, one build at least.
    expect(queue!.cars[2]!.estimate.at).toBeGreaterThanOrEqual(NOW + MIN);
  });

  it('estimates from the build time seen, in order, and never in the past', () => {
    // The front's build (pushed 4 min ago) takes 3 min as last seen: overdue, it lands any moment.
    const [queue] = read(train(3 * MIN)).queues;
    const [front, behind] = queue!.cars;
    expect(front!.estimate.kind).toBe('any_moment');
    expect(front!.estimate.at).toBe(NOW);
    expect(front!.estimate.text).toBe('any moment: its build runs 4 min, the last one seen took 3 min');
    expect(behind!.estimate).toMatchObject({ kind: 'any_moment', at: NOW });
    // One place is free (depth 3, two cars): !10 and !11 ride in a car built now; !12 waits for the
    // first landing, then its own build.
    const [ten, eleven, twelve] = queue!.waiting.map((w) => w.estimate);
    expect(ten).toEqual({ kind: 'estimate', at: NOW + 3 * MIN, text: 'in about 3 min' });
    expect(eleven).toEqual(ten);
    expect(twelve!.at).toBe(NOW + 3 * MIN);
    const all = [...queue!.cars.map((c) => c.estimate), ...queue!.waiting.map((w) => w.estimate)];
    for (const estimate of all) expect(estimate.at).toBeGreaterThanOrEqual(NOW);
    // A longer build: the front lands when its build is done, the others after it.
    const [slow] = read(train(10 * MIN)).queues;
    expect(slow!.cars.map((c) => c.estimate.at)).toEqual([NOW + 6 * MIN, NOW + 6 * MIN]);
    expect(slow!.waiting.map((w) => w.estimate.at)).toEqual([NOW + 10 * MIN, NOW + 10 * MIN, NOW + 16 * MIN]);
  });

  it('says "any moment", not "in about 0 s", for what is due within a second', () => {
    const [queue] = read(train(500)).queues;
    for (const w of queue!.waiting)
      expect(w.estimate).toEqual({ kind: 'any_moment', at: NOW + 500, text: 'any moment' });
    expect(renderQueuePage(read(train(500)))).not.toMatch(/in about 0 s|took 0 s/);
  });

  it('says there is no estimate before any build finished on the queue', () => {
    const [queue] = read(train()).queues;
    expect(queue).not.toHaveProperty('buildMs');
    for (const estimate of [...queue!.cars.map((c) => c.estimate), ...queue!.waiting.map((w) => w.estimate)])
      expect(estimate).toEqual({
        kind: 'none',
        text: 'no estimate yet: no build has finished on this queue',
      });
  });

  it('shows the last removals with their reasons, latest first, and the trouble that stops the queue', () => {
    const entries = train(3 * MIN);
    entries[0] = {
      ...entries[0]!,
      trouble: {
        since: NOW - 6 * MIN,
        count: 4,
        error: 'no git credentials are configured',
        told: NOW - MIN,
      },
    };
    const [queue] = read(entries, {
      controls: [
        {
          project: 'acme/web',
          targetBranch: 'release-2016_08',
          queue: 'candidates',
          paused: { by: 'ops', reason: 'release freeze', at: NOW - 3 * MIN },
        },
      ],
    }).queues;
    expect(queue!.removals.map((r) => [r.ref, r.reason])).toEqual([
      ['acme/web!13', 'ci/test failed on car 1'],
      ['acme/web!14', 'conflicts with the target'],
    ]);
    expect(queue!.trouble).toEqual({
      ref: 'acme/web!7',
      since: NOW - 6 * MIN,
      count: 4,
      error: 'no git credentials are configured',
      told: NOW - MIN,
    });
    expect(queue!.paused).toEqual({ by: 'ops', reason: 'release freeze', at: NOW - 3 * MIN });
    // Nothing lands while it is paused: no estimate says otherwise.
    for (const estimate of [...queue!.cars.map((c) => c.estimate), ...queue!.waiting.map((w) => w.estimate)])
      expect(estimate).toEqual({ kind: 'none', text: 'paused: nothing lands until the queue is resumed' });
  });

  it('keeps a queue whose merge requests all left, for its removals', () => {
    const gone = train().map((e) => ({
      ...e,
      left: { at: NOW - MIN, sha: 'e'.repeat(40), reason: 'closed' },
    }));
    const [queue] = read(gone).queues;
    expect(queue).toMatchObject({ size: 0, cars: [], waiting: [] });
    expect(queue!.removals).toHaveLength(8);
  });
});

describe('the queue page data of a serial queue', () => {
  it('shows the position, what the head waits for and its timeout', () => {
    const serial = (iid: number, extra: Partial<QueueEntry> = {}) => {
      const { depth: _d, batch: _b, ...rest } = entry(iid, extra);
      return rest;
    };
    const [queue] = read([
      serial(3, { pinnedSha: 'a'.repeat(40), testingSince: NOW - 5 * MIN }),
      serial(4),
    ]).queues;
    expect(queue!.kind).toBe('serial');
    expect(queue!.serial.map((r) => [r.member.position, r.member.ref, r.state, r.stateText])).toEqual([
      [1, 'acme/web!3', 'testing', 'waiting for ci/test on aaaaaaa'],
      [2, 'acme/web!4', 'waiting', 'waiting for acme/web!3 ahead'],
    ]);
    expect(queue!.serial[0]!.timeoutAt).toBe(NOW + 15 * MIN);
  });
});

describe('the queue page in HTML', () => {
  const data: QueuePageData = read(
    train(3 * MIN).map((e, i) =>
      i === 0 ? { ...e, trouble: { since: NOW - MIN, count: 1, error: 'git refused the bot: <denied>' } } : e,
    ),
    {
      itemOf: (key) =>
        key === 'merge_request:5:47' ? { title: 'Fix <login>', explain: 'explain/acme%2Fweb/mr/7' } : {},
    },
  );
  const page = renderQueuePage(data);

  it('names merge requests group/project!iid, never by their internal key, with their title and explain link', () => {
    expect(page).not.toContain('merge_request:');
    expect(page).toContain(
      '<a class="ref" href="../explain/acme%2Fweb/mr/7">acme/web!7</a> <span class="muted">Fix &lt;login&gt;</span>',
    );
  });

  it('lets branch names break only after / - _ .', () => {
    expect(page).toContain(
      '<code class="branch">hookbot/<wbr>train/<wbr>release-<wbr>2016_<wbr>08/<wbr>candidates/<wbr>7</code>',
    );
  });

  it('shows the trouble first in its queue, escaped', () => {
    const section = page.slice(page.indexOf('<section id="queue-1"'));
    expect(section.indexOf('This queue cannot move')).toBeLessThan(section.indexOf('<h3>Cars'));
    expect(section).toContain('git refused the bot: &lt;denied&gt;');
    expect(page).toContain('1 queue cannot move');
  });
});

describe('GET /status/queue and /status/queue.json', () => {
  it('serve the same data behind the status page auth, linked from the top of /status', async () => {
    const store = createMemoryStore({ now: () => NOW });
    await store.open();
    await store.recordDecision(MR_KEY, DECISION, { acted: true });
    for (const e of train(3 * MIN)) await store.enqueue(e);
    await store.enqueue(entry(7, { itemKey: MR_KEY, iid: 7, car: car(2, [7, 8]), trainCiMs: 3 * MIN }));
    // A store that keeps queue controls (an operator paused this queue).
    const paused = { by: 'ops', reason: 'release freeze', at: NOW - MIN };
    const controls = [{ project: 'acme/web', targetBranch: 'release-2016_08', queue: 'candidates', paused }];
    const served = await serveStatus({
      store: Object.assign(store, { queueControls: () => controls }),
      rules: { state: () => RULES_STATE },
      sweeps: [],
      now: () => NOW,
      auth: { username: 'ops', password: 'pw' },
    });
    try {
      expect((await fetch(`${served.url}/status/queue`)).status).toBe(401);
      expect((await fetch(`${served.url}/status/queue.json`)).status).toBe(401);
      const headers = { authorization: `Basic ${Buffer.from('ops:pw').toString('base64')}` };
      const html = await fetch(`${served.url}/status/queue`, { headers });
      expect(html.headers.get('content-security-policy')).toContain("default-src 'none'");
      const text = await html.text();
      expect(text).toContain('<h1>hookbot merge queues</h1>');
      const json = (await (
        await fetch(`${served.url}/status/queue.json`, { headers })
      ).json()) as QueuePageData;
      expect(json.now).toBe(NOW);
      expect(json.queues[0]!.cars[0]!.members[0]).toMatchObject({
        ref: 'acme/web!7',
        explain: '../explain/acme%2Fweb/mr/7',
      });
      const status = await (await fetch(`${served.url}/status`, { headers })).text();
      const top = status.slice(0, status.indexOf('<main>'));
      expect(top).toContain(
        '<a href="status/queue"><strong>Merge queues</strong></a>: 7 merge requests in 1 queue',
      );
      expect(top).toContain('paused: acme/web → release-2016_08 · candidates');
      expect(json.queues[0]!.paused).toEqual(paused);
      expect(text).toContain('<strong>Paused</strong> by ops');
    } finally {
      await served.close();
    }
  });
});
