/**
 * The document's inbox, read one entry at a time. Parsing the whole document at once parses every
 * pending body at once: a 32 MiB backlog of push deliveries took more than 160 MB of heap to load
 * that way, which is what a restart on a small heap cannot afford (issue 15). The store writes the
 * inbox third, as `{"version":…,"seq":…,"inbox":[…],…` (sliced-json.ts), so the bytes of each entry
 * can be found without parsing: each is then parsed, checked and kept as its text, one after the
 * other, and the rest of the document (small) is parsed as usual.
 *
 * A document in any other layout (written by hand, or by another version) is not split: the caller
 * parses it whole, as before.
 */

const HEAD = /^\{"version":\d+,"seq":\d+,"inbox":\[/;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

export interface SplitDocument {
  /** The document with an empty inbox, as JSON text. */
  rest: string;
  /** Each inbox entry's JSON text, in order. */
  entries: string[];
}

/** Splits the inbox's entries off the document's bytes, or undefined if it is not in the store's layout. */
export function splitInbox(data: Buffer): SplitDocument | undefined {
  const head = HEAD.exec(data.toString('latin1', 0, Math.min(data.length, 80)));
  if (head === null) return undefined;
  const open = head[0].length - 1; // the inbox's `[`
  const entries: string[] = [];
  let at = open + 1;
  if (data[at] === CLOSE_BRACKET) return { rest: data.toString('utf8'), entries };
  for (;;) {
    if (data[at] !== OPEN_BRACE) return undefined;
    const end = objectEnd(data, at);
    if (end === undefined) return undefined;
    // A copy of the entry's bytes decoded on their own: nothing keeps the whole document alive.
    entries.push(data.toString('utf8', at, end));
    at = end;
    if (data[at] === COMMA) at++;
    else if (data[at] === CLOSE_BRACKET) break;
    else return undefined;
  }
  const rest = Buffer.concat([data.subarray(0, open + 1), data.subarray(at)]).toString('utf8');
  return { rest, entries };
}

/** The index just past the object starting at `start`, or undefined if the data ends first. */
function objectEnd(data: Buffer, start: number): number | undefined {
  let depth = 0;
  for (let i = start; i < data.length; i++) {
    const c = data[i];
    if (c === QUOTE) {
      // Skip the string; bytes of multi-byte UTF-8 characters are all 0x80 or more, never a quote.
      for (i++; i < data.length && data[i] !== QUOTE; i++) if (data[i] === BACKSLASH) i++;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}
