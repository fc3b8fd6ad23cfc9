/**
 * One delivery as `hookbot simulate` reads it: a JSON file holding the body, and the
 * `X-Gitlab-Event` header (`--kind`) or, without it, the body's `object_kind`. The bot itself
 * routes on `object_kind` (receiver/parse-delivery.ts); the header only has to agree with it.
 */
import { readFile } from 'node:fs/promises';
import { parseHookEvent, type HookEvent } from '../events/index.ts';
import { KNOWN_KINDS } from '../events/index.ts';

/** `X-Gitlab-Event` headers of that era and the `object_kind` their bodies carry (docs/server-behaviour.md#hook-delivery). */
export const EVENT_KINDS: Readonly<Record<string, string>> = {
  'Push Hook': 'push',
  'Tag Push Hook': 'tag_push',
  'Issue Hook': 'issue',
  'Confidential Issue Hook': 'issue',
  'Note Hook': 'note',
  'Merge Request Hook': 'merge_request',
  'Build Hook': 'build',
  'Pipeline Hook': 'pipeline',
  'Wiki Page Hook': 'wiki_page',
};

/** Checked before parsing: `parseHookEvent` looks kinds up with `in`, which also sees `constructor`. */
const KNOWN = new Set<string>(KNOWN_KINDS);

const HEADER_OF: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(EVENT_KINDS)
    .filter(([header]) => header !== 'Confidential Issue Hook')
    .map(([header, kind]) => [kind, header]),
);

export type ReadDelivery =
  | { ok: true; header: string; event: HookEvent }
  /** `usage`: the command line is wrong (exit 2); otherwise the file is (exit 1). */
  | { ok: false; message: string; usage: boolean };

export async function readDelivery(file: string, kind: string | undefined): Promise<ReadDelivery> {
  if (kind !== undefined && !Object.hasOwn(EVENT_KINDS, kind))
    return {
      ok: false,
      usage: true,
      message: `--kind must be an X-Gitlab-Event header: ${Object.keys(EVENT_KINDS)
        .map((k) => `'${k}'`)
        .join(', ')} (got '${kind}')`,
    };
  let body: unknown;
  try {
    body = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    const reason =
      error instanceof SyntaxError
        ? `not JSON (${error.message})`
        : ((error as NodeJS.ErrnoException).code ?? String(error));
    return { ok: false, usage: false, message: `${file}: cannot read the delivery: ${reason}` };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return { ok: false, usage: false, message: `${file}: a delivery is one JSON object` };
  const objectKind = (body as Record<string, unknown>).object_kind;
  const fromHeader = kind === undefined ? undefined : EVENT_KINDS[kind];
  if (typeof objectKind === 'string' && fromHeader !== undefined && objectKind !== fromHeader)
    return {
      ok: false,
      usage: true,
      message: `--kind '${kind}' carries object_kind "${fromHeader}", but ${file} says "${objectKind}"`,
    };
  const resolved = typeof objectKind === 'string' ? objectKind : fromHeader;
  if (resolved === undefined)
    return {
      ok: false,
      usage: true,
      message: `${file} has no object_kind: say which hook it is with --kind, e.g. --kind 'Issue Hook'`,
    };
  if (!KNOWN.has(resolved))
    return { ok: false, usage: false, message: `${file}: unknown object_kind "${resolved}"` };
  // A body saved without its object_kind still parses: the schemas require it.
  const parsed = parseHookEvent(resolved, { ...body, object_kind: resolved });
  if (!parsed.ok) return { ok: false, usage: false, message: `${file}: ${parsed.message}` };
  return { ok: true, header: kind ?? HEADER_OF[resolved] ?? resolved, event: parsed.event };
}

// The pipeline's own conversion, so a simulated delivery triggers what a real one would.
export { triggerOf, type BotIdentity as BotUser } from '../receiver/index.ts';
