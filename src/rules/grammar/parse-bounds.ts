/**
 * The work a rule file may ask of the YAML parser, bounded before it is asked (issue 28, item 4).
 *
 * The size limit (256 KB) alone does not bound the parse: the `yaml` package checks each key of a
 * mapping against the keys before it, so one mapping of n keys costs n² / 2 comparisons. A 255 KB
 * file of 32,800 keys held the event loop for over a minute. So the file is refused at the first
 * place it passes one of these bounds, each checked by a linear pass before the work it bounds:
 *
 * - YAML tokens (scalars, `:`, `-`, brackets): 20,000 (a rule is 15 to 40; some 500 rules), and
 *   brackets nested 64 deep: counted by the lexer (the cheapest pass, a few ms per 100 KB), before
 *   the parser builds its tree;
 * - keys in one mapping: 200 (the grammar's widest mapping, a rule, has a dozen keys), and
 *   collections nested 64 deep: checked on the parser's first, linear pass (its syntax tree), before
 *   a document, with its quadratic duplicate-key check, is built from it.
 *
 * Within them the duplicate-key check costs at most 200 comparisons per key, so the whole parse is
 * linear in the file's size, and small (docs/benchmarks.md has the figures). The tree walk never
 * recurses deeper than the nesting bound.
 */
import { CST, Lexer } from 'yaml';

export const MAX_MAPPING_KEYS = 200;
export const MAX_YAML_TOKENS = 20_000;
export const MAX_YAML_DEPTH = 64;

/** Where the file passed a bound (an offset in the text), and what to say. */
export interface BoundExceeded {
  offset: number;
  message: string;
  hint: string;
}

const tooDeep = (offset: number): BoundExceeded => ({
  offset,
  message: `nested more than ${MAX_YAML_DEPTH} levels deep, the limit of a rule file`,
  hint: 'a rule nests a few levels: flatten the structure',
});

/** The lexer's markers (document start, scalar follows, flow ended early): no text of the file. */
const MARKERS = new Set(['\u0002', '\u001f', '\u0018']);
/** Tokens that are, or open, a node: a scalar, an alias, a key's `:`, an item's `-`, a bracket. */
const NODE_TOKENS = new Set([
  '\u001f',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'alias',
  'map-value-ind',
  'seq-item-ind',
  'flow-map-start',
  'flow-seq-start',
]);

/**
 * The lexer's pass: the first place the text passes the token or the bracket bound. Costs a few
 * milliseconds per 100 KB; the parser's tree costs several times more, and is built only after.
 */
export function lexicalBound(text: string): BoundExceeded | undefined {
  let offset = 0;
  let tokens = 0;
  let brackets = 0;
  for (const source of new Lexer().lex(text)) {
    const type = source === '\u001f' ? source : tokenKind(source);
    if (NODE_TOKENS.has(type) && ++tokens > MAX_YAML_TOKENS)
      return {
        offset,
        message: `more than ${MAX_YAML_TOKENS.toLocaleString('en-US')} YAML tokens (keys, values, items), the limit of a rule file`,
        hint: 'a rule file holds rules, not data: split it, or move the data elsewhere',
      };
    if (type === 'flow-map-start' || type === 'flow-seq-start') {
      if (++brackets > MAX_YAML_DEPTH) return tooDeep(offset);
    } else if (type === 'flow-map-end' || type === 'flow-seq-end') brackets--;
    if (!MARKERS.has(source)) offset += source.length;
  }
  return undefined;
}

/** What a lexer token is ('' for the text of a plain scalar, which follows its marker). */
function tokenKind(source: string): string {
  return CST.tokenType(source) ?? '';
}

/** The parser's tree: the first place a mapping passes the key bound, or nesting the depth bound. */
export function structuralBound(tokens: readonly CST.Token[]): BoundExceeded | undefined {
  const walk: Walk = {};
  for (const token of tokens) {
    if (token.type === 'document' && token.value) visit(token.value, 1, walk);
    if (walk.exceeded) return walk.exceeded;
  }
  return undefined;
}

interface Walk {
  exceeded?: BoundExceeded;
}

function visit(token: CST.Token, depth: number, walk: Walk): void {
  if (walk.exceeded) return;
  if (depth > MAX_YAML_DEPTH) {
    walk.exceeded = tooDeep(token.offset);
    return;
  }
  let items: readonly CST.CollectionItem[];
  let mapping: boolean;
  switch (token.type) {
    case 'block-map':
      items = token.items;
      mapping = true;
      break;
    case 'block-seq':
      items = token.items;
      mapping = false;
      break;
    case 'flow-collection':
      items = token.items;
      mapping = token.start.source === '{';
      break;
    case 'block-scalar':
      // Its properties (an anchor, a tag) are not nodes of their own.
      return;
    default:
      return;
  }
  if (mapping && items.length > MAX_MAPPING_KEYS) {
    const item = items[MAX_MAPPING_KEYS]!;
    walk.exceeded = {
      offset: item.key?.offset ?? item.start[0]?.offset ?? token.offset,
      message: `more than ${MAX_MAPPING_KEYS} keys in one mapping, the limit of a rule file`,
      hint: 'no mapping of the rules grammar has more than a few dozen keys: look for a misplaced indentation, or split the data',
    };
    return;
  }
  for (const item of items) {
    if (item.key) visit(item.key, depth + 1, walk);
    if (item.value) visit(item.value, depth + 1, walk);
    if (walk.exceeded) return;
  }
}
