/**
 * The status page links each action to the evaluation that planned it (issue 30): the actions of
 * recent decisions, a parked action, an armed merge request and a queued one each carry a link to
 * explain's answer for the decision that planned them (HTML and /status.json), and following the
 * link answers with that decision even after echoes of the bot's own changes (evaluations that did
 * nothing) were recorded after it, more of them than the page shows decisions.
 *
 * The store holds decisions as the item processor records them (`acted` for those that acted);
 * explain is served as the bot serves it (the same lookup and answer, from the store only).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainAnswer, findDecision } from '../../src/rules/index.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import type { StateStore } from '../../src/state/store.ts';
import { NOW, serveStatus, type Served } from './status-fixture.ts';

const MR = 'merge_request:5:42';
const ISSUE = 'issue:5:60';
const QUEUED = 'merge_request:5:50';

/** A decision as process-item.ts records it, reduced to what the page and explain read. */
function decision(
  itemKey: string,
  item: { kind: string; id: number; iid: number },
  event: string,
  calls: { id: string; op: string; rule: string; action: string; status: string; detail: string }[],
) {
  return {
    itemKey,
    at: new Date(NOW).toISOString(),
    dryRun: false,
    evaluation: {
      item: { ...item, project: 'acme/web', title: 'Update the docs', state: 'opened', labels: [] },
      trigger: { kind: event.split('.')[0], byBot: false },
      event,
      at: new Date(NOW).toISOString(),
      rules: [
        {
          rule: 'label docs MRs',
          applies: event !== 'status.changed',
          ...(event === 'status.changed' ? { why: 'status.changed is not in on: [merge_request.open]' } : {}),
          matched: calls.length > 0,
          conditions: [{ describe: 'title matches /docs/i', value: 'Update the docs', ok: true }],
          actions: [],
          planned: [],
        },
      ],
      plan: [],
    },
    execution: {
      itemKey,
      dryRun: false,
      headMoved: false,
      calls: calls.map((c) => ({ ...c, reason: 'r', call: `${c.op} x` })),
    },
    text: `${event}: ${calls.length ? 'acted' : 'nothing to do'}`,
  };
}

const labelCall = {
  id: 'label-1',
  op: 'mergeRequests.update',
  rule: 'label docs MRs',
  action: 'label',
  status: 'done',
  detail: 'labels [] -> [documentation]',
};
const assignCall = {
  id: 'assign-1',
  op: 'issues.assign',
  rule: 'assign ghost',
  action: 'assign',
  status: 'failed',
  detail: 'no such user',
};
const armCall = {
  id: 'arm-1',
  op: 'mergeRequests.mergeWhenBuildSucceeds',
  rule: 'automerge',
  action: 'merge_when_build_succeeds',
  status: 'done',
  detail: 'armed',
};
const queueCall = {
  id: 'queue-1',
  op: 'mergeQueue.enqueue',
  rule: 'queue-green',
  action: 'queue',
  status: 'done',
  detail: 'queued in default for master',
};

const MR_ITEM = { kind: 'merge_request', id: 42, iid: 7 };

async function filled(): Promise<{ store: StateStore; ids: Record<string, string> }> {
  let clock = NOW - 60 * 60_000;
  const store = createMemoryStore({ now: () => (clock += 1_000) });
  await store.open();
  const ids: Record<string, string> = {};
  const record = async (key: string, d: ReturnType<typeof decision>, acted: boolean, name: string) => {
    await store.recordDecision(key, d, { acted });
    ids[name] = store.latestDecision(key)!.id!;
  };
  await record(MR, decision(MR, MR_ITEM, 'merge_request.open', [labelCall, armCall]), true, 'mr');
  await record(
    ISSUE,
    decision(ISSUE, { kind: 'issue', id: 60, iid: 3 }, 'issue.open', [assignCall]),
    true,
    'issue',
  );
  // The echoes of the bot's own label and status on the MR: evaluated, recorded, nothing done;
  // more of them than the page shows decisions (25).
  for (let i = 0; i < 30; i++)
    await record(
      MR,
      decision(MR, MR_ITEM, i % 2 ? 'status.changed' : 'merge_request.update', []),
      false,
      'echo',
    );
  // Then the queue's decision: the newest, on the page.
  await record(
    QUEUED,
    decision(QUEUED, { kind: 'merge_request', id: 50, iid: 9 }, 'merge_request.update', [queueCall]),
    true,
    'queued',
  );
  await store.putAction({
    id: 'assign-1',
    itemKey: ISSUE,
    rule: 'assign ghost',
    call: {
      v: 1,
      project: 'acme/web',
      planned: {
        action: 'assign',
        rule: 'assign ghost',
        reason: 'r',
        call: { op: 'issues.assign', args: {} },
      },
    },
  });
  await store.parkAction('assign-1', 'no user nobody-by-this-name');
  await store.watch({
    itemKey: MR,
    project: 'acme/web',
    mrId: 42,
    headSha: 'a'.repeat(40),
    rule: 'automerge',
    required: ['ci/test'],
    since: NOW - 60_000,
  });
  await store.enqueue({
    itemKey: QUEUED,
    project: 'acme/web',
    projectId: 5,
    mrId: 50,
    iid: 9,
    targetBranch: 'master',
    queue: 'default',
    rule: 'queue-green',
    priority: 0,
    enqueuedAt: NOW - 60_000,
    required: ['ci/test'],
    statusTimeoutMs: 60_000,
    maxUpdates: 3,
    updates: 0,
  });
  return { store, ids };
}

describe('the status page links each action to the decision that planned it', () => {
  let served: Served;
  let ids: Record<string, string>;
  let page: string;
  let body: any;

  beforeAll(async () => {
    const filledStore = await filled();
    const { store } = filledStore;
    ids = filledStore.ids;
    served = await serveStatus(
      {
        store,
        rules: { state: () => ({ files: [], problems: [], refused: false }) },
        sweeps: [],
        now: () => NOW,
      },
      // As start-from-config.ts serves it: from the store only.
      async (query, selector) => {
        const found = findDecision(store.latestDecisions(), query);
        if (!found.found) return found;
        return explainAnswer(found, await store.keptDecisions(found.record.itemKey), selector);
      },
    );
    page = await (await fetch(`${served.url}/status`)).text();
    body = await (await fetch(`${served.url}/status.json`)).json();
  });
  afterAll(() => served?.close());

  it('each decision card is an anchor with its id and a link to explain for that decision', () => {
    const echo = body.decisions[1];
    expect(echo.id).toBe(ids.echo);
    expect(echo.acted).toBe(false);
    expect(body.decisions[0]).toMatchObject({ id: ids.queued, acted: true });
    expect(page).toContain(`<article class="card" id="decision-${ids.echo}">`);
    expect(page).toContain(`<a href="explain/acme%2Fweb/mr/7?decision=${ids.echo}">explain</a>`);
  });

  it('the actions of recent decisions: outcome, when, and the decision that planned each (HTML and JSON)', () => {
    // Newest first; the MR's label was planned before 30 echoes, and is still listed with its decision.
    expect(body.actions.map((a: any) => [a.id, a.status, a.decision])).toEqual([
      ['queue-1', 'done', ids.queued],
      ['assign-1', 'failed', ids.issue],
      ['label-1', 'done', ids.mr],
      ['arm-1', 'done', ids.mr],
    ]);
    const label = body.actions.find((a: any) => a.id === 'label-1');
    expect(label).toMatchObject({
      itemKey: MR,
      rule: 'label docs MRs',
      op: 'mergeRequests.update',
      detail: 'labels [] -> [documentation]',
      explain: `explain/acme%2Fweb/mr/7?decision=${ids.mr}`,
    });
    expect(typeof label.at).toBe('number');
    const actions = /<section id="actions">([\s\S]*?)<\/section>/.exec(page)?.[1] ?? '';
    expect(actions).toContain(`<a href="explain/acme%2Fweb/mr/7?decision=${ids.mr}">explain</a>`);
    // Its card is not among the 25 newest decisions: no anchor to a card that is not there.
    expect(body.decisions.map((d: any) => d.id)).not.toContain(ids.mr);
    expect(actions).not.toContain(`href="#decision-${ids.mr}"`);
    // The queue's decision is on the page: its action links to the card too.
    expect(body.decisions.map((d: any) => d.id)).toContain(ids.queued);
    expect(actions).toContain(`<a href="#decision-${ids.queued}">decision ${ids.queued}</a>`);
  });

  it('a parked action, an armed merge request and a queued one link to explain for what planned them', () => {
    expect(body.parked[0].explain).toBe('explain/acme%2Fweb/issue/3?action=assign-1');
    expect(body.mergeWatch[0].explain).toBe('explain/acme%2Fweb/mr/7?rule=automerge');
    expect(body.mergeQueue[0].explain).toBe('explain/acme%2Fweb/mr/9?rule=queue-green');
    for (const href of [body.parked[0].explain, body.mergeWatch[0].explain, body.mergeQueue[0].explain])
      expect(page).toContain(`<a href="${href.replace(/&/g, '&amp;')}">explain</a>`);
  });

  it('each link answers with the decision that planned the action, after the echoes', async () => {
    const follow = async (href: string) => {
      const response = await fetch(`${served.url}/${href}`, { headers: { accept: 'application/json' } });
      expect(response.status).toBe(200);
      return (await response.json()) as any;
    };
    const byDecision = await follow(body.actions.find((a: any) => a.id === 'label-1').explain);
    expect(byDecision.id).toBe(ids.mr);
    expect(byDecision.evaluation.event).toBe('merge_request.open');
    expect(byDecision.explanation).toContain(`decision ${ids.mr}`);
    expect((await follow(body.mergeWatch[0].explain)).id).toBe(ids.mr);
    expect((await follow(body.parked[0].explain)).id).toBe(ids.issue);
    expect((await follow(body.mergeQueue[0].explain)).id).toBe(ids.queued);
    // Without a selector: the latest evaluation is an echo, and the answer says why the bot acted.
    const plain = await (await fetch(`${served.url}/explain/acme%2Fweb/mr/7`)).text();
    expect(plain).toMatch(/^why it acted: 2 actions/);
    expect(plain).toMatch(
      new RegExp(`\\ndecision ${ids.mr} at \\S+Z, on event merge_request.open:\\n  1\\. done: `),
    );
    expect(plain).toContain('      ✓ title matches /docs/i: "Update the docs"');
    expect(plain).toContain('latest evaluation (decision');
  });
  it('explain refuses a query it cannot read (400), and says when no kept decision matches (404)', async () => {
    const ask = async (query: string) => {
      const response = await fetch(`${served.url}/explain/acme%2Fweb/mr/7?${query}`);
      return { status: response.status, message: ((await response.json()) as { message: string }).message };
    };
    expect(await ask('decision=xyz')).toEqual({
      status: 400,
      message: 'decision must be a decision id: 12 hex digits, as the status page and explain show them',
    });
    expect(await ask(`decision=${ids.mr}&rule=automerge`)).toEqual({
      status: 400,
      message: 'give one of decision, action and rule, not decision and rule',
    });
    expect(await ask('action=a&action=b')).toEqual({
      status: 400,
      message: 'action must be given once, as 1 to 300 characters',
    });
    expect(await ask('decision=0123456789ab')).toEqual({
      status: 404,
      message: 'no decision 0123456789ab is kept for merge request !7 of acme/web',
    });
    expect((await ask('rule=nobody')).status).toBe(404);
  });
});
