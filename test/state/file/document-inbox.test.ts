import { describe, expect, it } from 'vitest';
import { splitInbox } from '../../../src/state/file/document-inbox.ts';

const entry = (id: string, body: unknown) => ({ id, key: `k-${id}`, kind: 'issue', body });

describe("splitting the document's inbox into its entries' texts", () => {
  it('finds each entry, whatever brackets, quotes, escapes and characters its strings hold', () => {
    const inbox = [
      entry('a', { text: 'braces } ] { [ and "quotes" and \\ backslashes \\"', list: [[1], { x: [] }] }),
      entry('b', { text: 'é 日本 🎉', nested: { deep: [{ a: '}' }] } }),
      entry('c', {}),
    ];
    const doc = { version: 2, seq: 7, inbox, dedup: [{ key: 'x', id: 'a', expiresAt: 1 }], outbox: [] };
    const split = splitInbox(Buffer.from(JSON.stringify(doc)));
    expect(split?.entries.map((text) => JSON.parse(text) as unknown)).toEqual(inbox);
    expect(JSON.parse(split?.rest ?? '')).toEqual({ ...doc, inbox: [] });
  });

  it('gives no entries for an empty inbox', () => {
    const doc = { version: 2, seq: 0, inbox: [], dedup: [] };
    expect(splitInbox(Buffer.from(JSON.stringify(doc)))).toEqual({ rest: JSON.stringify(doc), entries: [] });
  });

  it.each([
    ['another layout (written by hand)', JSON.stringify({ version: 2, seq: 1, inbox: [] }, null, 2)],
    ['keys in another order', JSON.stringify({ seq: 1, version: 2, inbox: [] })],
    ['a cut document', '{"version":2,"seq":1,"inbox":[{"id":"a","body":{"x":'],
    ['an inbox that is not a list of objects', '{"version":2,"seq":1,"inbox":[1,2]}'],
  ])('leaves %s to be parsed whole', (_name, text) => {
    expect(splitInbox(Buffer.from(text))).toBeUndefined();
  });
});
