/**
 * Rule sweeps against the sandbox over HTTP: the stale-issue rule of the rule language's example,
 * its budget, the circuit breaker and its release, dry runs, due times, and a restart mid-sweep.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approve, definitionHash, pauseOf } from '../../src/scheduler/breaker.ts';
import type { RuleSweepReport } from '../../src/scheduler/sweeps/rule-sweep.ts';
import { scheduleKey } from '../../src/scheduler/sweeps/rule-sweep.ts';
import { createFileStore } from '../../src/state/file/file-store.ts';
import { createClient } from '../../src/api/client.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import {
  DAY,
  issueAged,
  issueStates,
  loadRulesFrom,
  makeWorld,
  notesOf,
  wire,
  type World,
  STALE_RULE,
  STALE_COMMENT,
} from './world.ts';

const sandbox = useSandbox();

/** `stale` issues updated 90 days ago, `fresh` ones 5 days ago, `pinned` stale but pinned. */
async function seed(world: World, counts: { stale: number; fresh: number; pinned?: number }): Promise<void> {
  for (let i = 0; i < counts.stale; i++) await issueAged(world, `stale ${i}`, 90 + i);
  for (let i = 0; i < counts.fresh; i++) await issueAged(world, `fresh ${i}`, 5);
  for (let i = 0; i < (counts.pinned ?? 0); i++) await issueAged(world, `pinned ${i}`, 120, ['pinned']);
}

const ruleReport = (report: RuleSweepReport) => report.projects[0]?.rules[0];

async function closedTitles(world: World): Promise<string[]> {
  return [...(await issueStates(world))]
    .filter(([, state]) => state === 'closed')
    .map(([title]) => title)
    .sort();
}

async function commentsPerIssue(world: World): Promise<number[]> {
  const counts: number[] = [];
  for await (const issue of world.admin.issues.list(world.project.id)) {
    counts.push((await notesOf(world, issue.id)).filter((body) => body.startsWith(STALE_COMMENT)).length);
  }
  return counts;
}

describe('rule sweep: close stale issues', () => {
  it('closes exactly the stale issues, each with one comment, and leaves fresh and pinned ones open', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'stale1', rules: STALE_RULE });
    await seed(world, { stale: 4, fresh: 6, pinned: 1 });

    const report = (await world.sweeps.run('rules')) as RuleSweepReport;

    expect(ruleReport(report)).toMatchObject({
      outcome: 'ran',
      lookedAt: 11,
      matched: 4,
      acted: 4,
      waiting: 0,
    });
    expect(await closedTitles(world)).toEqual(['stale 0', 'stale 1', 'stale 2', 'stale 3']);
    const states = await issueStates(world);
    expect(states.get('pinned 0')).toBe('opened');
    for (let i = 0; i < 6; i++) expect(states.get(`fresh ${i}`)).toBe('opened');
    expect((await commentsPerIssue(world)).sort()).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
  });

  it('acts on at most the budget per run, least recently updated first, and says how many wait', async () => {
    const world = await makeWorld(sandbox().sb, {
      prefix: 'stale2',
      rules: STALE_RULE,
      settings: { budget: 2 },
    });
    await seed(world, { stale: 5, fresh: 6 });

    const first = ruleReport((await world.sweeps.run('rules', { force: true })) as RuleSweepReport);
    expect(first).toMatchObject({ matched: 5, acted: 2, waiting: 3 });
    // Least recently updated first: stale 4 (94 days) and stale 3 (93 days).
    expect(await closedTitles(world)).toEqual(['stale 3', 'stale 4']);

    const second = ruleReport((await world.sweeps.run('rules', { force: true })) as RuleSweepReport);
    expect(second).toMatchObject({ matched: 3, acted: 2, waiting: 1 });
    const third = ruleReport((await world.sweeps.run('rules', { force: true })) as RuleSweepReport);
    expect(third).toMatchObject({ matched: 1, acted: 1, waiting: 0 });
    expect(await closedTitles(world)).toEqual(['stale 0', 'stale 1', 'stale 2', 'stale 3', 'stale 4']);
    expect((await commentsPerIssue(world)).filter((n) => n > 0)).toEqual([1, 1, 1, 1, 1]);
  });

  it('runs a due schedule once and not again before its next time', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'stale3', rules: STALE_RULE });
    await seed(world, { stale: 1, fresh: 3 });
    const before = Date.now();

    const first = (await world.sweeps.run('rules')) as RuleSweepReport;
    expect(first.projects.map((p) => p.schedules)).toEqual([['daily']]);
    const next = world.store.nextRun(scheduleKey('daily'), world.path);
    expect(next).toBeGreaterThanOrEqual(before + DAY);

    await issueAged(world, 'stale later', 100);
    const second = (await world.sweeps.run('rules')) as RuleSweepReport;
    expect(second.projects).toEqual([]);
    expect((await issueStates(world)).get('stale later')).toBe('opened');
  });

  it('a dry run reports the plan and changes nothing, on the server or in the store', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'stale4', rules: STALE_RULE });
    await seed(world, { stale: 2, fresh: 3 });
    const dry = wire(world, { dryRun: true });
    const callsBefore = world.sb.ctx.db.data.notes.length;

    const report = (await dry.sweeps.run('rules')) as RuleSweepReport;

    expect(report.dryRun).toBe(true);
    const rule = ruleReport(report);
    expect(rule).toMatchObject({ matched: 2, acted: 2 });
    expect(rule?.items.flatMap((item) => item.calls.map((call) => call.status))).toEqual([
      'dry-run',
      'dry-run',
      'dry-run',
      'dry-run',
    ]);
    expect(await closedTitles(world)).toEqual([]);
    expect(world.sb.ctx.db.data.notes.length).toBe(callsBefore);
    expect(world.store.nextRun(scheduleKey('daily'), world.path)).toBeUndefined();
    expect(world.store.stats()).toMatchObject({ outbox: 0, recentDecisions: 0 });
  });
});

describe('rule sweep: API calls', () => {
  it('walking the projects the server lists, reads none of them again for its items', async () => {
    const world = await makeWorld(sandbox().sb, { prefix: 'listed', rules: STALE_RULE });
    await seed(world, { stale: 2, fresh: 2 });
    const routes: string[] = [];
    const client = createClient({
      baseUrl: sandbox().sb.url,
      token: world.bot.private_token,
      retry: { limit: 0 },
      onCall: (call) => routes.push(`${call.method} ${call.route}`),
    });
    // No projects configured: the sweep walks what the server lists for the bot.
    const { sweeps } = wire({ ...world, client, settings: { ...world.settings, projects: [] } });
    const report = (await sweeps.run('rules')) as RuleSweepReport;
    expect(report.projects.map((project) => project.project)).toEqual([world.path]);
    expect(ruleReport(report)).toMatchObject({ lookedAt: 4, acted: 2 });
    expect(routes).toContain('GET /projects');
    expect(routes.filter((route) => route === 'GET /projects/:id')).toEqual([]);
  });
});

describe('rule sweep: circuit breaker', () => {
  it('pauses a rule that would touch more than max_items, touches nothing, and approval releases it', async () => {
    const world = await makeWorld(sandbox().sb, {
      prefix: 'breaker1',
      rules: STALE_RULE,
      settings: { breaker: { maxItems: 3, maxShare: 1 } },
    });
    await seed(world, { stale: 5, fresh: 10 });

    const tripped = (await world.sweeps.run('rules', { force: true })) as RuleSweepReport;
    expect(tripped.tripped).toEqual(['close stale issues']);
    expect(ruleReport(tripped)).toMatchObject({ outcome: 'tripped', matched: 5, acted: 0, waiting: 5 });
    expect(ruleReport(tripped)?.reason).toContain('would touch 5 items, more than max_items 3');
    expect(pauseOf(world.store, 'close stale issues')).toBeDefined();
    expect(await closedTitles(world)).toEqual([]);

    // Paused: later runs leave it alone.
    const paused = (await world.sweeps.run('rules', { force: true })) as RuleSweepReport;
    expect(ruleReport(paused)).toMatchObject({ outcome: 'paused', lookedAt: 0, acted: 0 });
    expect(await closedTitles(world)).toEqual([]);

    // hookbot sweep --approve: the definition is exempt from the breaker, the budget still holds.
    const rule = world.rules.byProject(world.path).rules[0]!;
    await approve(world.store, rule.name, [definitionHash(rule)], Date.now());
    const released = (await world.sweeps.run('rules', { force: true })) as RuleSweepReport;
    expect(released.tripped).toEqual([]);
    expect(ruleReport(released)).toMatchObject({ outcome: 'ran', matched: 5, acted: 5 });
    expect((await closedTitles(world)).length).toBe(5);
    expect(pauseOf(world.store, 'close stale issues')).toBeUndefined();
  });

  it('trips on max_share of the items looked at', async () => {
    const world = await makeWorld(sandbox().sb, {
      prefix: 'breaker2',
      rules: STALE_RULE,
      settings: { breaker: { maxItems: 50, maxShare: 0.5 } },
    });
    await seed(world, { stale: 4, fresh: 3 });

    const report = (await world.sweeps.run('rules', { force: true })) as RuleSweepReport;

    expect(report.tripped).toEqual(['close stale issues']);
    expect(ruleReport(report)?.reason).toContain('would touch 4 of 7 items (57%), more than max_share 0.5');
    expect(await closedTitles(world)).toEqual([]);
  });

  it('a changed definition lifts the pause; the new definition is checked afresh', async () => {
    const world = await makeWorld(sandbox().sb, {
      prefix: 'breaker3',
      rules: STALE_RULE,
      settings: { breaker: { maxItems: 3, maxShare: 1 } },
    });
    await seed(world, { stale: 5, fresh: 2 });
    await world.sweeps.run('rules', { force: true });
    expect(pauseOf(world.store, 'close stale issues')).toBeDefined();

    // The person narrows the rule: only issues older than 93 days (stale 3 and stale 4).
    world.rules = await loadRulesFrom(
      world.rulesDir,
      STALE_RULE.replace('older_than: 60d', 'older_than: 93d'),
    );
    const { sweeps } = wire(world);
    const report = (await sweeps.run('rules', { force: true })) as RuleSweepReport;

    expect(report.unpaused).toEqual(['close stale issues']);
    expect(ruleReport(report)).toMatchObject({ outcome: 'ran', matched: 2, acted: 2 });
    expect(await closedTitles(world)).toEqual(['stale 3', 'stale 4']);
    expect(pauseOf(world.store, 'close stale issues')).toBeUndefined();
  });
});

describe('rule sweep: restart mid-sweep', () => {
  it('a new bot over the same state file neither loses nor repeats actions', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hookbot-sweep-restart-'));
    try {
      const path = join(dir, 'hookbot.json');
      const world = await makeWorld(sandbox().sb, {
        prefix: 'restart1',
        rules: STALE_RULE,
        store: createFileStore({ path }),
      });
      await seed(world, { stale: 6, fresh: 7 });

      // Stop the first bot after it acted on 2 items (between two items, as a shutdown does).
      const controller = new AbortController();
      let acted = 0;
      const first = wire(world);
      const execute = first.executor.execute.bind(first.executor);
      first.executor.execute = async (evaluation, snapshot, options) => {
        const result = await execute(evaluation, snapshot, options);
        if (++acted === 2) controller.abort();
        return result;
      };
      const stopped = (await first.sweeps.run('rules', { signal: controller.signal })) as RuleSweepReport;
      expect(stopped.aborted).toBe(true);
      expect(ruleReport(stopped)).toMatchObject({ matched: 6, acted: 2, waiting: 4 });
      // The crash: the store is dropped without folding its journal.
      await world.store.close({ compact: false });
      expect((await closedTitles(world)).length).toBe(2);

      const reopened = createFileStore({ path });
      await reopened.open();
      // Not finished, so still due: the new bot runs it without being forced.
      expect(reopened.nextRun(scheduleKey('daily'), world.path)).toBeUndefined();
      const second = wire({ ...world, store: reopened });
      const resumed = (await second.sweeps.run('rules')) as RuleSweepReport;

      expect(ruleReport(resumed)).toMatchObject({ matched: 4, acted: 4, waiting: 0 });
      expect(await closedTitles(world)).toEqual([
        'stale 0',
        'stale 1',
        'stale 2',
        'stale 3',
        'stale 4',
        'stale 5',
      ]);
      expect((await commentsPerIssue(world)).filter((n) => n > 0)).toEqual([1, 1, 1, 1, 1, 1]);
      expect(reopened.nextRun(scheduleKey('daily'), world.path)).toBeGreaterThan(Date.now());
      expect(reopened.stats().outbox).toBe(0);
      await reopened.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
