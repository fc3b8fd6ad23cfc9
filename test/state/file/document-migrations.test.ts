import { describe, expect, it } from 'vitest';
import { emptyDocument, SCHEMA_VERSION } from '../../../src/state/file/document.ts';
import { StateError } from '../../../src/state/errors.ts';
import { migrateDocument } from '../../../src/state/file/document-migrations.ts';

const PATH = 'data/hookbot.json';

describe('document migrations', () => {
  it.each([
    ['an array', [], 'corrupt', /not a JSON object/],
    ['a string', 'hookbot', 'corrupt', /not a JSON object/],
    ['no version', { seq: 0 }, 'corrupt', /no valid schema version \(found undefined\)/],
    ['version 0', { version: 0 }, 'corrupt', /no valid schema version \(found 0\)/],
    ['a fractional version', { version: 1.5 }, 'corrupt', /no valid schema version \(found 1.5\)/],
    [
      'a newer version',
      { version: SCHEMA_VERSION + 5 },
      'newer_version',
      /schema version 7; this one knows up to 2/,
    ],
    [
      'a current version with a wrong field',
      { ...emptyDocument(), dedup: [{ key: 'k', id: 'i', expiresAt: 'soon' }] },
      'corrupt',
      /at dedup\.0\.expiresAt/,
    ],
    ['a version 1 missing its inbox', { version: 1, seq: 0 }, 'corrupt', /version 1 document at inbox/],
  ])('refuses %s, naming the file and its backup', (_name, raw, code, message) => {
    let error: unknown;
    try {
      migrateDocument(raw, PATH);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StateError);
    expect(error).toMatchObject({ code, path: PATH });
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain(PATH);
  });

  it('passes a current document through unchanged', () => {
    const doc = { ...emptyDocument(), seq: 12 };
    expect(migrateDocument(structuredClone(doc), PATH)).toEqual({ document: doc });
  });

  it('adds parked actions, last-success times and paused rules to a version 1 document', () => {
    const v1 = {
      version: 1,
      seq: 3,
      inbox: [],
      dedup: [],
      outbox: [],
      watches: [],
      schedules: { nextRuns: [{ sweep: 'stale', project: 'acme/web', at: 5 }] },
      decisions: { latest: [], recent: [] },
    };
    expect(migrateDocument(v1, PATH)).toEqual({
      migratedFrom: 1,
      document: {
        ...emptyDocument(),
        seq: 3,
        schedules: { nextRuns: [{ sweep: 'stale', project: 'acme/web', at: 5 }], lastSuccess: [] },
      },
    });
  });
});
