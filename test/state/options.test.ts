import { describe, expect, it } from 'vitest';
import { resolveFileStoreOptions } from '../../src/state/options.ts';

describe('state store options', () => {
  it('places the journal and the backup next to the document by default', () => {
    expect(resolveFileStoreOptions()).toMatchObject({
      path: 'data/hookbot.json',
      journalPath: 'data/hookbot.journal',
      backupPath: 'data/hookbot.json.bak',
      groupWindowMs: 0,
      dedupTtlMs: 24 * 60 * 60 * 1000,
      maxDedupKeys: 100_000,
      maxPending: 10_000,
      maxParked: 1_000,
      decisionItems: 500,
      recentDecisions: 200,
      compactBytes: 8 * 1024 * 1024,
      compactRecords: 20_000,
      dedupFileKeys: 1_000,
    });
    expect(resolveFileStoreOptions({ path: '/var/lib/hookbot/state.json' })).toMatchObject({
      journalPath: '/var/lib/hookbot/state.journal',
      backupPath: '/var/lib/hookbot/state.json.bak',
    });
  });

  it.each([
    [{ maxPending: 0 }, /maxPending must be a positive integer, got 0/],
    [{ dedupTtlMs: 1.5 }, /dedupTtlMs must be a positive integer/],
    [{ groupWindowMs: -1 }, /groupWindowMs must be 0 or more/],
    [{ compactRecords: Number.NaN }, /compactRecords must be a positive integer/],
    [{ dedupFileKeys: 0 }, /dedupFileKeys must be a positive integer, got 0/],
    [{ path: 'a/state.journal' }, /three different files/],
  ])('refuses %j', (options, message) => {
    expect(() => resolveFileStoreOptions(options)).toThrow(message);
  });
});
