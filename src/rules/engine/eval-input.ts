/** What conditions and actions read during one evaluation: the snapshot plus facts derived once. */
import { triggerEvents } from './event-names.ts';
import { parseTimestamp } from '../../time/index.ts';
import type { ItemSnapshot, TriggerEvent } from './snapshot.ts';

export interface EvalInput {
  snapshot: ItemSnapshot;
  /** The clock of this evaluation (ms since the epoch): ages are measured from it. */
  now: number;
  /** The trigger's event names, comma-separated when a burst brought several (`issue.open`, `note.created`...). */
  event: string;
  /** The trigger's events (one, or every event of a coalesced burst). */
  events: readonly TriggerEvent[];
  /** The events' names and bot flags in one string: which rules run depends on nothing else of them. */
  eventKey: string;
  /** The item's labels as a set, built once rather than once per condition. */
  labels: ReadonlySet<string>;
  /** The labels and changed files as explain shows them: one copy per evaluation, shared by the records. */
  labelList: string[];
  changedFilesShown: string[] | null;
  /** Parsed `created_at` and `updated_at` (NaN when unreadable). */
  createdAt: number;
  updatedAt: number;
}

const SHOWN_FILES = 20;

/** At most 20 paths, then how many more: a record, not a diff. */
function shownFiles(paths: readonly string[] | null): string[] | null {
  if (paths === null) return null;
  if (paths.length <= SHOWN_FILES) return [...paths];
  return [...paths.slice(0, SHOWN_FILES), `… ${paths.length - SHOWN_FILES} more`];
}

export function createEvalInput(snapshot: ItemSnapshot, now: number): EvalInput {
  const events = triggerEvents(snapshot.trigger);
  return {
    snapshot,
    now,
    event: events.length === 1 ? events[0]!.name : [...new Set(events.map((e) => e.name))].join(', '),
    events,
    eventKey: events.map((e) => `${e.name}${e.byBot ? '(bot)' : ''}`).join(','),
    labels: new Set(snapshot.labels),
    labelList: [...snapshot.labels],
    changedFilesShown: snapshot.kind === 'merge_request' ? shownFiles(snapshot.changedFiles) : null,
    createdAt: parseTimestamp(snapshot.created_at),
    updatedAt: parseTimestamp(snapshot.updated_at),
  };
}
