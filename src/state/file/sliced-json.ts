/**
 * JSON.stringify in slices, yielding to the event loop between them. Serialising the document in
 * one call blocks the loop for its whole size (the issue measured 290 ms for lowdb at 100,000
 * records; our document at its bounds is ~9 MB): the receiver would stall meanwhile. Slicing keeps
 * each stall to a few milliseconds.
 *
 * Only arrays and plain objects are walked; every other value, and each array element, goes
 * through JSON.stringify as usual, except `RawJson`, whose text is already JSON and goes in as it is
 * (the inbox entries keep the JSON they were journaled as: a compaction does not serialise them again). The caller must not modify the value while this runs (the state
 * model never modifies a record in place, and its snapshot arrays are copies).
 */

/**
 * A value that knows its JSON: emitted verbatim, asked for it only when its turn comes (so a
 * value that serialises itself lazily does so in its slice). The text must be valid JSON.
 */
export abstract class RawJson {
  abstract readonly json: string;
}

/** Array elements serialised between two yields. */
const SLICE = 1_000;

export async function stringifyInSlices(value: unknown, slice = SLICE): Promise<string> {
  const parts: string[] = [];
  let sinceYield = 0;

  const walk = async (node: unknown): Promise<void> => {
    if (Array.isArray(node)) {
      parts.push('[');
      for (let i = 0; i < node.length; i++) {
        if (i > 0) parts.push(',');
        // An element JSON cannot hold (undefined, a function) is written as null, as JSON.stringify does.
        const element: unknown = node[i];
        parts.push(element instanceof RawJson ? element.json : (JSON.stringify(element) ?? 'null'));
        if (++sinceYield >= slice) {
          sinceYield = 0;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      parts.push(']');
      return;
    }
    if (node instanceof RawJson) {
      parts.push(node.json);
      return;
    }
    if (isPlainObject(node)) {
      parts.push('{');
      let first = true;
      for (const [key, child] of Object.entries(node)) {
        if (child === undefined || typeof child === 'function') continue;
        parts.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
        first = false;
        await walk(child);
      }
      parts.push('}');
      return;
    }
    parts.push(JSON.stringify(node) ?? 'null');
  };

  await walk(value);
  return parts.join('');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(value);
  // Objects with toJSON (Date and friends) are left to JSON.stringify.
  return (proto === Object.prototype || proto === null) && !('toJSON' in value);
}
