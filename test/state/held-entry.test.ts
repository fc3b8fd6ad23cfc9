import { describe, expect, it } from 'vitest';
import { HeldEntry } from '../../src/state/held-entry.ts';
import type { InboxEntry } from '../../src/state/store.ts';

const entry: InboxEntry = {
  id: 'd-1',
  key: 'k',
  kind: 'Issue Hook',
  receivedAt: 1,
  acceptedAt: 2,
  headers: { 'x-gitlab-event': 'Issue Hook' },
  body: { object_kind: 'issue', text: 'é "quoted"\n', list: [1, null] },
};

describe('held inbox entries', () => {
  it.each([
    ['from its JSON (the write path)', () => HeldEntry.fromJson('d-1', 'k', JSON.stringify(entry))],
    ['from a parsed entry (replay)', () => HeldEntry.fromEntry(structuredClone(entry))],
  ])('built %s, gives the entry and its JSON, each the same on every read', (_name, make) => {
    const held = make();
    expect([held.id, held.key]).toEqual(['d-1', 'k']);
    expect(held.entry).toEqual(entry);
    expect(held.entry).toBe(held.entry);
    expect(JSON.parse(held.json)).toEqual(entry);
    expect(held.json).toBe(held.json);
  });
});
