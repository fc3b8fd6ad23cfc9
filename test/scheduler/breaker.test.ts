/** The circuit breaker's pieces: when it trips, what counts as a new definition, pauses and approvals. */
import { describe, expect, it } from 'vitest';
import { loadRules } from '../../src/rules/grammar/load.ts';
import {
  approve,
  definitionHash,
  isApproved,
  pause,
  pauseOf,
  pauseReason,
  pausedDefinition,
  tripReason,
} from '../../src/scheduler/breaker.ts';
import { createMemoryStore } from '../../src/state/memory-store.ts';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const limits = { maxItems: 50, maxShare: 0.5 };

describe('tripReason', () => {
  it.each([
    ['nothing to touch', 0, 10, undefined],
    ['as many as max_items', 50, 1000, undefined],
    ['more than max_items', 51, 1000, 'would touch 51 items, more than max_items 50'],
    ['exactly half', 5, 10, undefined],
    ['more than half', 6, 10, 'would touch 6 of 10 items (60%), more than max_share 0.5'],
    ['nothing looked at', 0, 0, undefined],
  ])('%s', (_name, touched, lookedAt, expected) => {
    expect(tripReason(touched, lookedAt, limits)).toBe(expected);
  });
});

async function ruleOf(yaml: string) {
  const dir = await mkdtemp(join(tmpdir(), 'hookbot-breaker-'));
  await writeFile(join(dir, 'default.yml'), yaml);
  const rules = await loadRules(dir);
  expect(rules.problems).toEqual([]);
  const rule = rules.byProject('acme/web').rules[0];
  if (!rule) throw new Error('no rule');
  return rule;
}

const stale = (age: string, comment = 'Closing.') => `
rules:
  - name: close stale issues
    schedule: daily
    for: issues
    if: [ { updated: { older_than: ${age} } } ]
    do: [ { comment: "${comment}" }, close ]
`;

describe('definitionHash', () => {
  it('is stable for the same rule and changes with a condition or an action', async () => {
    const base = definitionHash(await ruleOf(stale('60d')));
    expect(definitionHash(await ruleOf(stale('60d')))).toBe(base);
    expect(definitionHash(await ruleOf(stale('90d')))).not.toBe(base);
    expect(definitionHash(await ruleOf(stale('60d', 'Closed for inactivity.')))).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{12}$/);
  });
});

describe('pauses and approvals', () => {
  it('a pause keeps the definition that tripped; approval lifts it and exempts that definition only', async () => {
    const store = createMemoryStore();
    await store.open();
    await pause(store, 'close stale issues', 'abcdef012345', 'acme/web: would touch 60 items');

    const paused = pauseOf(store, 'close stale issues');
    expect(paused && pausedDefinition(paused)).toBe('abcdef012345');
    expect(paused && pauseReason(paused)).toBe('acme/web: would touch 60 items');

    await approve(store, 'close stale issues', ['abcdef012345'], Date.now());
    expect(pauseOf(store, 'close stale issues')).toBeUndefined();
    expect(isApproved(store, 'close stale issues', 'abcdef012345')).toBe(true);
    expect(isApproved(store, 'close stale issues', '000000000000')).toBe(false);
  });

  it('a pause made without a hash has no definition (it never lifts by itself)', async () => {
    const store = createMemoryStore();
    await store.open();
    await store.pauseRule('r', 'paused by hand');
    const paused = pauseOf(store, 'r');
    expect(paused && pausedDefinition(paused)).toBeUndefined();
  });
});
