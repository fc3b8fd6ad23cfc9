/**
 * A merge queue that cannot work says so where people look, not only in the log
 * (docs/merge-queue.md, "When the queue cannot move"). A step of the head that fails (git failing,
 * no git credentials, the API refusing) is counted on its queue entry (`trouble`): the status page's
 * Merge queue section and explain show it from the first failure on. Once the failures have lasted
 * `TROUBLE_COMMENT_AFTER` (3 steps in a row and 5 minutes: a server restart or a network blip stays
 * quiet), the merge request gets one comment saying why it does not move. A step that does not fail
 * clears the count; a new run of failures may comment again.
 */
import type { QueueEntry, StateStore } from '../../state/index.ts';
import type { CallReport } from '../../rules/index.ts';

export const TROUBLE_COMMENT_AFTER = { steps: 3, ms: 5 * 60_000 } as const;

/** The error as shown (status page, explain, comment): one bounded line. */
const ERROR_CHARS = 500;

export interface TroubleDeps {
  store: Pick<StateStore, 'queued' | 'enqueue'>;
  now: () => number;
  /** Posts the comment (through the executor's outbox). */
  tell: (body: string) => Promise<CallReport>;
}

function held(store: TroubleDeps['store'], itemKey: string): QueueEntry | undefined {
  return store.queued().find((entry) => entry.itemKey === itemKey && !entry.left);
}

export async function noteTrouble(deps: TroubleDeps, entry: QueueEntry, error: string): Promise<void> {
  const stored = held(deps.store, entry.itemKey);
  if (!stored) return;
  const now = deps.now();
  const before = stored.trouble;
  const line = error.replace(/\s+/g, ' ').trim();
  const trouble: NonNullable<QueueEntry['trouble']> = {
    since: before?.since ?? now,
    count: (before?.count ?? 0) + 1,
    error: line.length > ERROR_CHARS ? `${line.slice(0, ERROR_CHARS - 1)}…` : line,
    ...(before?.told !== undefined ? { told: before.told } : {}),
  };
  let failed: unknown;
  if (
    trouble.told === undefined &&
    trouble.count >= TROUBLE_COMMENT_AFTER.steps &&
    now - trouble.since >= TROUBLE_COMMENT_AFTER.ms
  ) {
    const minutes = Math.round((now - trouble.since) / 60_000);
    const body =
      `The merge queue cannot move this merge request: its last ${trouble.count} steps failed, ` +
      `for ${minutes} minute${minutes === 1 ? '' : 's'}, the last with: ${trouble.error}\n\n` +
      `It keeps its place in the ${entry.queue} merge queue for \`${entry.targetBranch}\` and the bot ` +
      `tries again at each run, but this needs the bot's operator (the status page's Merge queue ` +
      `section shows the queue's state).`;
    try {
      await deps.tell(body);
      trouble.told = now;
    } catch (error) {
      failed = error;
    }
  }
  await deps.store.enqueue({ ...stored, trouble });
  if (failed !== undefined) throw failed;
}

export async function clearTrouble(store: TroubleDeps['store'], itemKey: string): Promise<void> {
  const stored = held(store, itemKey);
  if (!stored?.trouble) return;
  const { trouble: _trouble, ...rest } = stored;
  await store.enqueue(rest);
}
