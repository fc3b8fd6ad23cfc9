/**
 * Generated bad deliveries, each with the answer issue 4 asks for. Malformed JSON, wrong types,
 * huge and deeply nested bodies, invalid UTF-8, missing headers, wrong secrets and valid JSON of
 * the wrong shape. A seeded generator: the same seed gives the same run.
 *
 * What "right" is, per issue 4 and the receiver (src/receiver/hook-handler.ts):
 * - bad or missing secret: 401 `unauthorized`, whatever else is wrong (verified before parsing);
 * - over the body limit (1 MiB): 413, declared or streamed;
 * - not UTF-8, not JSON, not an object, no `X-Gitlab-Event`, no `object_kind`: 400 with the reason;
 * - a kind the bot does not handle: 202 `ignored`;
 * - the same bytes again: 202 `duplicate`;
 * - an envelope that is right (an object with a string `object_kind`) around a payload of the wrong
 *   shape: 202 `accepted`, because the receiver only checks the envelope before persisting (it must
 *   answer within the server's 10 s); the pipeline then refuses the payload and acts on nothing.
 */
import { goodHeaders, type RawDelivery } from './deliveries.ts';

export type Expected =
  /** `message`: the JSON answer's `message`; undefined when the answer is not the bot's JSON (431, 404). */
  | { status: number; message?: string }
  /** No answer is possible: the client hung up mid-body. Only the bot's survival is checked. */
  | { noAnswer: true };

export interface BadCase {
  category: string;
  delivery: RawDelivery;
  expected: Expected;
}

export const LIMIT_BYTES = 1024 * 1024;

/** mulberry32: small, fast, good enough to pick cases reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BAD_JSON = 'body is not valid JSON';
const NOT_OBJECT = 'body must be a JSON object';
const NO_KIND = 'missing object_kind';
const NO_EVENT = 'missing X-Gitlab-Event header';
const NOT_UTF8 = 'body is not valid UTF-8';
const TOO_LARGE = `body too large (limit ${LIMIT_BYTES} bytes)`;

const answer = (status: number, message?: string): Expected =>
  message === undefined ? { status } : { status, message };

/**
 * Ids that name nothing in the sandbox: a bad delivery must never point at an issue a good one
 * owns, or its effect could be mistaken for the good one's.
 */
const NOWHERE = 900_000_000;
/** A stand-in replaced by a number literal too large for a double, after JSON.stringify. */
const HUGE_NUMBER = '__huge_number__';

interface Context {
  secret: string;
  /** A good payload (for mutations that keep most of it). */
  sample: string;
  random: () => number;
  /** A distinct number per case, so bodies that must be accepted are never duplicates. */
  nonce: number;
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

function withNonce(body: Record<string, unknown>, nonce: number): string {
  return JSON.stringify({ ...body, nonce });
}

/** Large buffers are built once: the generator makes thousands of cases. */
let hugeBody: Buffer | undefined;
function huge(): Buffer {
  hugeBody ??= Buffer.from(
    JSON.stringify({ object_kind: 'issue', padding: 'x'.repeat(LIMIT_BYTES + 1024) }),
    'utf8',
  );
  return hugeBody;
}

const TOO_DEEP = 'body is nested more than 64 levels deep';
const DEPTH = 100_000;
const deepArray = () => `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
const deepObject = () => `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`;

type Generator = (ctx: Context) => Omit<BadCase, 'category'>;

/** Each category: how often it comes (weight) and how a case is made. */
const CATEGORIES: Record<string, { weight: number; make: Generator }> = {
  'malformed-json': {
    weight: 12,
    make: ({ secret, sample, random }) => {
      const variants = [
        () => sample.slice(0, 1 + Math.floor(random() * (sample.length - 2))), // cut short
        () => sample.replace(/"/g, "'"),
        () => `${sample.slice(0, -1)},}`,
        () => '{"object_kind": "issue",}',
        () => '{"object_kind": issue}',
        () => '{"object_kind": "issue", "x": NaN}',
        () => '{"object_kind": "issue"} {"object_kind": "issue"}',
        () => '{"object_kind": "iss\u0000ue"}', // a raw control character inside a string
        () => 'object_kind=issue&object_attributes[id]=1', // a form body
        () => '<?xml version="1.0"?><hook/>',
      ];
      return {
        delivery: { body: pick(random, variants)(), headers: goodHeaders(secret) },
        expected: answer(400, BAD_JSON),
      };
    },
  },
  'empty-body': {
    weight: 2,
    make: ({ secret }) => ({
      delivery: { body: '', headers: goodHeaders(secret) },
      expected: answer(400, BAD_JSON),
    }),
  },
  'not-an-object': {
    weight: 6,
    make: ({ secret, random }) => ({
      delivery: {
        body: pick(random, ['[]', '[{"object_kind":"issue"}]', '"issue"', '42', 'null', 'true', '-0.5e10']),
        headers: goodHeaders(secret),
      },
      expected: answer(400, NOT_OBJECT),
    }),
  },
  'no-object-kind': {
    weight: 6,
    make: ({ secret, sample, random, nonce }) => {
      const body = JSON.parse(sample) as Record<string, unknown>;
      delete body.object_kind;
      return {
        delivery: {
          body: pick(random, [() => '{}', () => withNonce(body, nonce), () => '{"objectKind":"issue"}'])(),
          headers: goodHeaders(secret),
        },
        expected: answer(400, NO_KIND),
      };
    },
  },
  'object-kind-wrong-type': {
    weight: 6,
    make: ({ secret, random, nonce }) => ({
      delivery: {
        body: withNonce({ object_kind: pick(random, [42, null, [], {}, '', true, ['issue']]) }, nonce),
        headers: goodHeaders(secret),
      },
      expected: answer(400, NO_KIND),
    }),
  },
  'kind-not-handled': {
    weight: 4,
    make: ({ secret, random, nonce }) => ({
      delivery: {
        body: withNonce(
          { object_kind: pick(random, ['wiki_page', 'foo', 'ISSUE', 'issues', 'system_hook']) },
          nonce,
        ),
        headers: goodHeaders(secret),
      },
      expected: answer(202, 'ignored'),
    }),
  },
  'wrong-field-types': {
    weight: 8,
    make: ({ secret, sample, random, nonce }) => {
      const body = JSON.parse(sample) as Record<string, unknown> & {
        object_attributes: Record<string, unknown>;
      };
      const attrs = body.object_attributes;
      const mutations = [
        () => (attrs.id = 'not a number'),
        () => (attrs.id = -1),
        () => (attrs.id = HUGE_NUMBER), // becomes 1e309 in the text, which JSON.parse reads as Infinity
        () => (attrs.id = NOWHERE + nonce + 0.5),
        () => (attrs.project_id = { id: 1 }),
        () => (attrs.project_id = null),
        () => (body.object_attributes = 'opened' as unknown as Record<string, unknown>),
        () => (body.object_attributes = [] as unknown as Record<string, unknown>),
        () => (attrs.action = 42),
        () => (body.user = 'root'),
      ];
      attrs.id = NOWHERE + nonce;
      pick(random, mutations)();
      return {
        delivery: {
          body: withNonce(body, nonce).replace(`"${HUGE_NUMBER}"`, '1e309'),
          headers: goodHeaders(secret),
        },
        expected: answer(202, 'accepted'),
      };
    },
  },
  'wrong-shape': {
    weight: 8,
    make: ({ secret, random, nonce }) => ({
      delivery: {
        body: withNonce(
          pick(random, [
            { object_kind: 'issue' },
            { object_kind: 'issue', object_attributes: {} },
            { object_kind: 'merge_request', object_attributes: { id: 'x' } },
            { object_kind: 'note', object_attributes: { noteable_type: 'Issue' } },
            { object_kind: 'push', ref: 42, commits: 'none' },
            { object_kind: 'build', build_id: [] },
            { object_kind: 'pipeline', object_attributes: null },
          ]),
          nonce,
        ),
        headers: goodHeaders(secret),
      },
      expected: answer(202, 'accepted'),
    }),
  },
  'prototype-keys': {
    // Written as text: an object literal's __proto__ would set the prototype, not a key.
    weight: 2,
    make: ({ secret, nonce }) => ({
      delivery: {
        body: `{"object_kind":"issue","__proto__":{"object_attributes":{"id":1}},"constructor":{"prototype":{"polluted":true}},"nonce":${nonce}}`,
        headers: goodHeaders(secret),
      },
      expected: answer(202, 'accepted'),
    }),
  },
  'huge-declared': {
    weight: 1,
    make: ({ secret }) => ({
      delivery: { body: huge(), headers: goodHeaders(secret) },
      expected: answer(413, TOO_LARGE),
    }),
  },
  'huge-chunked': {
    weight: 1,
    make: ({ secret }) => ({
      delivery: { body: huge(), headers: goodHeaders(secret), chunked: true },
      expected: answer(413, TOO_LARGE),
    }),
  },
  'deep-array': {
    weight: 1,
    make: ({ secret }) => ({
      delivery: { body: deepArray(), headers: goodHeaders(secret) },
      // The depth is checked before the shape: the receiver refuses to parse what it could not store.
      expected: answer(400, TOO_DEEP),
    }),
  },
  'deep-object': {
    weight: 1,
    make: ({ secret }) => ({
      delivery: { body: deepObject(), headers: goodHeaders(secret) },
      expected: answer(400, TOO_DEEP),
    }),
  },
  'deep-object-with-kind': {
    // A right envelope around a body nested too deep to store (JSON.stringify overflows the stack):
    // bad input, so 400 (the message is the bot's to choose), not a 503 asking the server to try
    // again, nor a crash.
    weight: 1,
    make: ({ secret, random, nonce }) => ({
      delivery: {
        body: `{"object_kind":"${pick(random, ['issue', 'push', 'note'])}","nonce":${nonce},"x":${pick(random, [deepArray, deepObject])()}}`,
        headers: goodHeaders(secret),
      },
      expected: answer(400),
    }),
  },
  'invalid-utf8': {
    weight: 6,
    make: ({ secret, sample, random }) => {
      const at = 10 + Math.floor(random() * (sample.length - 20));
      const bad = pick(random, [
        [0xff],
        [0xc3, 0x28], // a lead byte without its continuation
        [0xe2, 0x82], // cut short
        [0xc0, 0xaf], // overlong '/'
        [0xed, 0xa0, 0x80], // a UTF-16 surrogate
        [0xf8, 0x88, 0x80, 0x80, 0x80], // five-byte form
      ]);
      const text = Buffer.from(sample, 'utf8');
      return {
        delivery: {
          body: Buffer.concat([text.subarray(0, at), Buffer.from(bad), text.subarray(at)]),
          headers: goodHeaders(secret),
        },
        expected: answer(400, NOT_UTF8),
      };
    },
  },
  'missing-token': {
    weight: 6,
    make: ({ secret, sample }) => {
      const headers: Record<string, string> = goodHeaders(secret);
      delete headers['x-gitlab-token'];
      return { delivery: { body: sample, headers }, expected: answer(401, 'unauthorized') };
    },
  },
  'wrong-token': {
    weight: 10,
    make: ({ secret, sample, random }) => {
      const token = pick(random, [
        // (Spaces around a header value are not part of it in HTTP, so `secret ` would be the secret.)
        '',
        secret.slice(0, -1),
        `${secret}\t.`,
        `${secret}x`,
        secret.toUpperCase(),
        secret.split('').reverse().join(''),
        'x'.repeat(4096),
        'null',
        `Bearer ${secret}`,
        encodeURIComponent(`${secret}/`),
      ]);
      // A wrong secret loses even when everything else is wrong too: nothing is revealed.
      const body = pick(random, [sample, '{not json', '[]']);
      return {
        delivery: { body, headers: { ...goodHeaders(secret), 'x-gitlab-token': token } },
        expected: answer(401, 'unauthorized'),
      };
    },
  },
  'missing-event-header': {
    weight: 6,
    make: ({ secret, sample, nonce }) => {
      const headers: Record<string, string> = goodHeaders(secret);
      delete headers['x-gitlab-event'];
      const body = JSON.parse(sample) as Record<string, unknown>;
      return { delivery: { body: withNonce(body, nonce), headers }, expected: answer(400, NO_EVENT) };
    },
  },
  'oversized-header': {
    // Past node's header limit (16 KiB): refused by the HTTP parser before the bot sees it.
    weight: 1,
    make: ({ secret, sample }) => ({
      delivery: { body: sample, headers: { ...goodHeaders(secret), 'x-padding': 'p'.repeat(20_000) } },
      expected: answer(431),
    }),
  },
  'cut-off-mid-body': {
    weight: 2,
    make: ({ secret, sample }) => ({
      delivery: { body: sample.slice(0, 100), headers: goodHeaders(secret), declaredLength: sample.length },
      expected: { noAnswer: true },
    }),
  },
  'wrong-method': {
    weight: 2,
    make: ({ secret, sample, random }) => ({
      delivery: {
        body: sample,
        headers: goodHeaders(secret),
        method: pick(random, ['PUT', 'PATCH', 'DELETE']),
      },
      expected: answer(404),
    }),
  },
};

export const CATEGORY_NAMES = Object.keys(CATEGORIES);

/** `count` bad cases, categories drawn by weight. */
export function makeBadCases(
  count: number,
  options: { secret: string; sample: string; seed: number },
): BadCase[] {
  const random = seededRandom(options.seed);
  const entries = Object.entries(CATEGORIES);
  const total = entries.reduce((sum, [, c]) => sum + c.weight, 0);
  const cases: BadCase[] = [];
  for (let i = 0; i < count; i++) {
    let roll = random() * total;
    const [category, { make }] = entries.find(([, c]) => (roll -= c.weight) < 0) ?? entries[0]!;
    cases.push({ category, ...make({ secret: options.secret, sample: options.sample, random, nonce: i }) });
  }
  return cases;
}
