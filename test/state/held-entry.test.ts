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
    ['from its JSON (the write path)', () => HeldEntry.fromJson(entry, JSON.stringify(entry))],
    ['from a parsed entry (replay)', () => HeldEntry.fromEntry(structuredClone(entry))],
  ])('built %s, gives the entry and its JSON, equal on every read', (_name, make) => {
    const held = make();
    expect([held.id, held.key, held.kind, held.receivedAt]).toEqual(['d-1', 'k', 'Issue Hook', 1]);
    expect(held.entry).toEqual(entry);
    expect(JSON.parse(held.json)).toEqual(entry);
    expect(held.json).toBe(held.json);
    expect(held.bytes).toBe(Buffer.byteLength(held.json));
  });

  it('keeps no parsed body: each read parses anew, so a reader that lets go leaves only the text', () => {
    const held = HeldEntry.fromEntry(structuredClone(entry));
    const first = held.entry;
    expect(held.entry).toEqual(first);
    expect(held.entry).not.toBe(first);
  });
});
