/**
 * Label names with `?` and `&` (valid on the last 8.x releases, which refuse only the comma) over
 * real HTTP: the bot's client creates, lists, filters, renames and deletes them against the sandbox,
 * and a rule whose `labels` condition and `label` action name them reads and writes them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createExecutor } from '../../src/rules/executor/executor.ts';
import { createItemProcessor, type Decision } from '../../src/rules/item/process-item.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { makeExecWorld, type ExecWorld } from '../helpers/exec-world.ts';
import { useSandbox } from '../helpers/sandbox.ts';
import { rulesFrom } from '../rules/support.ts';

const ODD_NAMES = ['label?', 'label&foo', '?', '&'];

const ctx = useSandbox();
let world: ExecWorld;

beforeAll(() => {
  world = makeExecWorld(ctx().sb, 'odd');
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('label names with ? and & through the bot client', () => {
  it('creates, lists, renames and deletes them, addressed by name', async () => {
    const project = await world.newProject('odd-labels');
    const bot = world.botClient();
    for (const name of ODD_NAMES) {
      const created = await bot.labels.create(project.id, { name, color: '#aabbcc' });
      expect(created.name).toBe(name);
    }
    const listed = await collect(bot.labels.list(project.path));
    expect(listed.map((l) => l.name).sort()).toEqual([...ODD_NAMES].sort());

    const renamed = await bot.labels.update(project.id, 'label&foo', { new_name: 'label&bar?' });
    expect(renamed.name).toBe('label&bar?');
    await bot.labels.remove(project.id, '?');
    await bot.labels.remove(project.id, '&');
    const left = await collect(bot.labels.list(project.id));
    expect(left.map((l) => l.name).sort()).toEqual(['label&bar?', 'label?']);
  });

  it('writes them on issues and merge requests and filters issues by them', async () => {
    const project = await world.newProject('odd-issues');
    const bot = world.botClient();
    const both = await bot.issues.create(project.id, { title: 'Both', labels: ['label?', 'a&b'] });
    expect([...both.labels].sort()).toEqual(['a&b', 'label?']);
    const one = await bot.issues.create(project.path, { title: 'One', labels: ['label?'] });
    const edited = await bot.issues.update(project.id, one.id, { labels: ['?', '&', 'label?'] });
    expect([...edited.labels].sort()).toEqual(['&', '?', 'label?']);

    const byBoth = await collect(bot.issues.list(project.id, { labels: ['a&b', 'label?'] }));
    expect(byBoth.map((i) => i.id)).toEqual([both.id]);
    const byAmpersand = await collect(bot.issues.list(project.id, { labels: ['&'] }));
    expect(byAmpersand.map((i) => i.id)).toEqual([one.id]);

    await world.admin.branches.create(project.id, { branch_name: 'odd', ref: 'master' });
    const mr = await bot.mergeRequests.create(project.id, {
      source_branch: 'odd',
      target_branch: 'master',
      title: 'Odd labels',
      labels: ['label&foo'],
    });
    expect(mr.labels).toEqual(['label&foo']);
    const mrEdited = await bot.mergeRequests.update(project.id, mr.id, { labels: ['label&foo', '?'] });
    expect([...mrEdited.labels].sort()).toEqual(['?', 'label&foo']);
  });

  it('refuses a comma inside a name before any call', async () => {
    const project = await world.newProject('odd-comma');
    const bot = world.botClient();
    await expect(bot.issues.create(project.id, { title: 't', labels: ['a,b'] })).rejects.toThrow(
      /label "a,b": a name in a list cannot contain a comma/,
    );
    expect(() => bot.issues.list(project.id, { labels: ['x', 'y,z'] })).toThrow(TypeError);
    expect(bot.http.stats.byRoute.get('POST /projects/:id/issues') ?? 0).toBe(0);
  });
});

describe('label names with ? and & in rules', () => {
  it('a `labels` condition matches them and a `label` action adds and removes them', async () => {
    const project = await world.newProject('odd-rules');
    const issue = await world.admin.issues.create(project.id, {
      title: 'Needs care',
      labels: ['label?', '?'],
    });
    const client = world.botClient();
    const store = createMemoryStore();
    await store.open();
    const rules = rulesFrom(`rules:
  - name: odd names
    on: [issue.open]
    if:
      - labels: { all: ['label?'], none: ['label&foo'] }
    do:
      - label: { add: ['label&foo', '&'], remove: ['?'] }
`);
    const process = createItemProcessor({
      client,
      store,
      rules: { forProject: () => rules },
      executor: createExecutor({ client, store, dryRun: false }),
    });
    await process({ type: 'issue', projectId: project.id, id: issue.id }, [
      { kind: 'issue', action: 'open', byBot: false },
    ]);

    const decision = store.latestDecision(`issue:${project.id}:${issue.id}`)?.decision as Decision;
    expect(decision.evaluation.rules[0]).toMatchObject({ rule: 'odd names', matched: true });
    expect(decision.execution.calls.map((call) => [call.op, call.status])).toEqual([
      ['issues.update', 'done'],
    ]);
    const after = await world.admin.issues.get(project.id, issue.id);
    expect([...after.labels].sort()).toEqual(['&', 'label&foo', 'label?']);
    const labels = await collect(world.admin.labels.list(project.id));
    expect(labels.map((l) => l.name)).toEqual(expect.arrayContaining(['label&foo', '&']));
  });
});
