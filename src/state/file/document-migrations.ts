/**
 * Schema versions of the document and the steps between them. A document is read as plain JSON,
 * brought up to SCHEMA_VERSION one step at a time, then validated once; a document from a newer
 * hookbot, or one that fails validation, is refused (never rewritten), naming the file.
 */
import { refuseFile, refuseNewer } from '../errors.ts';
import { SCHEMA_VERSION, stateDocumentSchema, type StateDocument } from './document.ts';

type RawDocument = Record<string, unknown>;

/**
 * `steps[v]` turns a version-v document into a version v+1 one. Steps only add or reshape;
 * the journal needs none (see mutations.ts: a mutation's meaning never changes).
 */
const steps: Record<number, (doc: RawDocument) => RawDocument> = {
  // Version 1 was the first layout: no parked actions, no last-success times, no paused rules.
  1: (doc) => ({
    ...doc,
    version: 2,
    parked: [],
    schedules: { ...asRecord(doc['schedules']), lastSuccess: [] },
    pausedRules: [],
  }),
};

export interface Migrated {
  document: StateDocument;
  /** The version read from disk when it was older than SCHEMA_VERSION. */
  migratedFrom?: number;
}

export function migrateDocument(raw: unknown, path: string, backupPath = `${path}.bak`): Migrated {
  const hint = `Restore it from its backup ${backupPath} or move it away to start empty.`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw refuseFile('corrupt', path, 'is not a hookbot state document (not a JSON object)', hint);
  const version = (raw as RawDocument)['version'];
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)
    throw refuseFile('corrupt', path, `has no valid schema version (found ${JSON.stringify(version)})`, hint);
  if (version > SCHEMA_VERSION)
    throw refuseNewer(path, version, SCHEMA_VERSION, 'restore a backup written by this version');

  let doc = raw as RawDocument;
  for (let v = version; v < SCHEMA_VERSION; v++) {
    const step = steps[v];
    if (step === undefined) throw new Error(`no migration step from state schema version ${v}`);
    doc = step(doc);
  }
  const parsed = stateDocumentSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : ` at ${issue.path.join('.') || '(root)'}: ${issue.message}`;
    throw refuseFile(
      'corrupt',
      path,
      `does not have the shape of a version ${version} document${where}`,
      hint,
    );
  }
  return version < SCHEMA_VERSION
    ? { document: parsed.data, migratedFrom: version }
    : { document: parsed.data };
}

function asRecord(value: unknown): RawDocument {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as RawDocument) : {};
}
