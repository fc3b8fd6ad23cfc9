import { describe, expect, it } from 'vitest';
import { RawJson, stringifyInSlices } from '../../../src/state/file/sliced-json.ts';

describe('stringifyInSlices', () => {
  it.each([
    [
      'a document-like object',
      { version: 2, seq: 9, inbox: [{ id: 'a', body: { x: [1, 'y'] } }], s: { n: [], m: [1] } },
    ],
    ['strings needing escapes', { 'k"ey': ['line\nbreak', 'tab\t', 'é', '\u2028'] }],
    [
      'undefined and functions as JSON.stringify drops them',
      { a: undefined, b: () => 1, c: [undefined, () => 1] },
    ],
    ['a Date and nested toJSON values', { at: new Date(0), list: [new Date(1)] }],
    ['scalars', [null, true, 0, -1.5, 'x']],
    ['empty containers', { a: [], b: {}, c: [[], {}] }],
  ])('gives what JSON.stringify gives for %s', async (_name, value) => {
    expect(await stringifyInSlices(value)).toBe(JSON.stringify(value));
  });

  it('lets the event loop run between slices of a large array', async () => {
    const big = { items: Array.from({ length: 50 }, (_, i) => ({ i })) };
    let interleaved = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      interleaved++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const text = await stringifyInSlices(big, 10);
    running = false;
    expect(text).toBe(JSON.stringify(big));
    // Five slices of ten: other callbacks ran between them.
    expect(interleaved).toBeGreaterThanOrEqual(4);
  });

  it('runs in one go when the value is smaller than a slice', async () => {
    let interleaved = 0;
    setImmediate(() => interleaved++);
    await stringifyInSlices({ items: [1, 2, 3] }, 10);
    expect(interleaved).toBe(0);
  });

  it('emits RawJson values verbatim, asking each for its text only when its turn comes', async () => {
    const asked: string[] = [];
    class Lazy extends RawJson {
      readonly #name: string;
      constructor(name: string) {
        super();
        this.#name = name;
      }
      get json(): string {
        asked.push(this.#name);
        return JSON.stringify({ name: this.#name, body: 'é\n' });
      }
    }
    const value = { inbox: [new Lazy('a'), 1, new Lazy('b')], top: new Lazy('c') };
    const expected = JSON.stringify({
      inbox: [{ name: 'a', body: 'é\n' }, 1, { name: 'b', body: 'é\n' }],
      top: { name: 'c', body: 'é\n' },
    });
    expect(await stringifyInSlices(value, 1)).toBe(expected);
    expect(asked).toEqual(['a', 'b', 'c']);
  });
});
