/**
 * Retries after an outage, over HTTP through a proxy that answers 503 for a while: the actions a
 * sweep planned wait in the outbox with backoff, and once the server is back the retry sweep
 * carries each out exactly once, also when the server had acted on a request whose answer was lost.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RetryReport } from '../../src/scheduler/sweeps/retries.ts';
import type { RuleSweepReport } from '../../src/scheduler/sweeps/rule-sweep.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.ts';
import {
  issueAged,
  issueStates,
  makeWorld,
  notesOf,
  type World,
  STALE_RULE,
  STALE_COMMENT,
} from './world.ts';

const sandbox = useSandbox();

let proxy: FaultProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

/** What the sweep reads before it acts: the listing and the project (the outage starts after). */
const isListing = (path: string): boolean =>
  /\/issues\?/.test(path) || /^\/api\/v3\/projects\/\d+$/.test(path);

async function comments(world: World, issueId: number): Promise<number> {
  return (await notesOf(world, issueId)).filter((body) => body.startsWith(STALE_COMMENT)).length;
}

async function setUp(prefix: string) {
  proxy = await startFaultProxy(sandbox().sb.url);
  const clock = { now: Date.now() };
  const world = await makeWorld(sandbox().sb, {
    prefix,
    rules: STALE_RULE,
    baseUrl: proxy.url,
    now: () => clock.now,
    // Every issue of these small projects is stale: not what the breaker is about here.
    settings: { breaker: { maxItems: 50, maxShare: 1 } },
  });
  const issue = await issueAged(world, 'stale', 90);
  return { world, issue, clock, proxy };
}

describe('retries after an outage', () => {
  it('the server is down while the sweep acts: nothing happens, then the retry sweep does it once', async () => {
    const { world, issue, clock, proxy } = await setUp('outage1');
    // The listing gets through; every call the executor makes meets the outage.
    proxy.decide = ({ path }) => (isListing(path) ? undefined : 'down');

    const sweep = (await world.sweeps.run('rules')) as RuleSweepReport;
    const calls = sweep.projects[0]?.rules[0]?.items[0]?.calls ?? [];
    expect(calls.map((call) => [call.op, call.status, call.retryable])).toEqual([
      ['notes.createIssueNote', 'failed', true],
      ['issues.update', 'failed', true],
    ]);
    expect((await issueStates(world)).get('stale')).toBe('opened');
    expect(await comments(world, issue.id)).toBe(0);
    expect(world.store.stats().outbox).toBe(2);

    // Still down: due again after the backoff, failing again, counted.
    clock.now += 60_000;
    const stillDown = (await world.sweeps.run('retries')) as RetryReport;
    expect(stillDown).toMatchObject({ due: 2, counts: { failed: 2 } });
    expect(world.store.dueActions(clock.now)).toEqual([]);

    // Back up.
    proxy.decide = () => undefined;
    clock.now += 10 * 60_000;
    const recovered = (await world.sweeps.run('retries')) as RetryReport;
    expect(recovered).toMatchObject({ due: 2, counts: { done: 2 }, parkedNow: [] });
    expect((await issueStates(world)).get('stale')).toBe('closed');
    expect(await comments(world, issue.id)).toBe(1);
    expect(world.store.stats().outbox).toBe(0);

    // Nothing is left to do twice.
    clock.now += 60 * 60_000;
    expect(((await world.sweeps.run('retries')) as RetryReport).due).toBe(0);
    const again = (await world.sweeps.run('rules', { force: true })) as RuleSweepReport;
    expect(again.projects[0]?.rules[0]).toMatchObject({ matched: 0, acted: 0 });
    expect(await comments(world, issue.id)).toBe(1);
  });

  it('the answer to the comment is lost after the server posted it: the retry finds it and posts no second one', async () => {
    const { world, issue, clock, proxy } = await setUp('outage2');
    // The comment is posted but its answer is lost, and the outage also swallows the executor's
    // re-read, so nobody can tell yet whether it landed.
    let outage: 'before' | 'lost' | 'over' = 'before';
    proxy.decide = ({ method, path }) => {
      if (!/\/notes/.test(path) || outage === 'over') return undefined;
      if (method === 'POST') {
        outage = 'lost';
        return 'lost';
      }
      if (outage === 'lost') {
        outage = 'over';
        return 'down';
      }
      return undefined;
    };

    const sweep = (await world.sweeps.run('rules')) as RuleSweepReport;
    const calls = sweep.projects[0]?.rules[0]?.items[0]?.calls ?? [];
    expect(calls.map((call) => [call.op, call.status, call.retryable])).toEqual([
      ['notes.createIssueNote', 'failed', true],
      ['issues.update', 'done', undefined],
    ]);
    expect(await comments(world, issue.id)).toBe(1);
    expect(world.store.stats().outbox).toBe(1);

    clock.now += 10 * 60_000;
    // The retry re-evaluates first: the issue is closed now, so the rule no longer plans the
    // comment, and it is withdrawn rather than sent again.
    const retried = (await world.sweeps.run('retries')) as RetryReport;
    expect(retried.calls.map((call) => [call.op, call.status])).toEqual([
      ['notes.createIssueNote', 'withdrawn'],
    ]);
    expect(retried.calls[0]?.detail).toBe(
      'withdrawn: close stale issues no longer matches (state is opened seen "closed")',
    );
    expect(await comments(world, issue.id)).toBe(1);
    expect(world.store.stats().outbox).toBe(0);
  });

  it('stops a run early while the server keeps failing, leaving the rest due', async () => {
    const { world, clock, proxy } = await setUp('outage3');
    for (let i = 0; i < 4; i++) await issueAged(world, `stale ${i}`, 90);
    proxy.decide = ({ path }) => (isListing(path) ? undefined : 'down');
    await world.sweeps.run('rules');
    expect(world.store.stats().outbox).toBe(10);

    clock.now += 60_000;
    const report = (await world.sweeps.run('retries')) as RetryReport;

    // Two actions per issue, one fresh read per issue: three issues failed, two wait.
    expect(report.due).toBe(10);
    expect(report.calls).toHaveLength(6);
    expect(report.stoppedEarly).toContain('3 items in a row failed transiently');
    expect(world.store.dueActions(clock.now)).toHaveLength(4);
  });
});
