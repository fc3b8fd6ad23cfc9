/**
 * The bot's merge-queue memory, for `simulate` and `plan` (issue 37): a merge request the queue took
 * out with a comment is remembered at the head it left at, and the bot does not queue it again there
 * (docs/merge-queue.md#leaving-the-queue). The tools say the same only when they read what the bot
 * remembers: its PostgreSQL database (read-only, safe beside the replicas), or the state file of a
 * stopped bot (a running bot is the file's one writer: it is then not opened, and the answer says so).
 */
import { existsSync } from 'node:fs';
import type { QueueEntry } from '../state/index.ts';
import { holdersOf } from './state-holders.ts';

export type QueueMemory = { read: true; entries: QueueEntry[]; from: string } | { read: false; why: string };

export type QueueMemorySource = { database: string; schema: string } | { state: string } | { none: string };

export async function readQueueMemory(source: QueueMemorySource, tool: string): Promise<QueueMemory> {
  const { createFileStore, describeDatabase, readQueueEntries, resolveFileStoreOptions, StateError } =
    await import('../state/index.ts');
  if ('none' in source) return { read: false, why: source.none };
  if ('database' in source) {
    const from = `the state database ${describeDatabase(source.database)} (schema ${source.schema})`;
    try {
      return { read: true, entries: await readQueueEntries(source.database, source.schema, tool), from };
    } catch (error) {
      if (error instanceof StateError) return { read: false, why: error.message };
      throw error;
    }
  }
  const file = source.state;
  const journal = resolveFileStoreOptions({ path: file }).journalPath;
  const holders = await holdersOf(journal);
  if (holders.length > 0)
    return {
      read: false,
      why: `${file} is in use by process ${holders.join(', ')} (a running bot, the file's one writer): not opened`,
    };
  if (!existsSync(file) && !existsSync(journal)) return { read: false, why: `no state file at ${file}` };
  // Bounds well above any configured ones, as explain opens it: opening must not drop what the bot keeps.
  const store = createFileStore({
    path: file,
    decisionItems: 1_000_000,
    recentDecisions: 1_000_000,
    decisionHistory: 1_000_000,
    actingDecisions: 1_000_000,
    decisionItemBytes: Number.MAX_SAFE_INTEGER,
    decisionBytes: Number.MAX_SAFE_INTEGER,
  });
  try {
    await store.open();
  } catch (error) {
    if (error instanceof StateError) return { read: false, why: error.message };
    throw error;
  }
  try {
    return { read: true, entries: store.queued(), from: file };
  } finally {
    // Without compaction: reading must leave the files as the bot left them.
    await store.close({ compact: false });
  }
}

/** What the answer says when a queue call is planned and the memory was not read. */
export const unreadMemoryRemark = (why: string): string =>
  `the queue's memory was not read (${why}): a merge request the queue took out at this head would not enter again, which this answer cannot tell`;
