/**
 * A merge request's story in its merge queue, read back from the decisions the store kept for it
 * (explain, docs/merge-queue.md#where-it-shows): the evaluations that put it in a queue (their
 * `mergeQueue.enqueue` call), those that took it out because its rule stopped holding (`leftQueue`),
 * and the queue's own events (queue-events.ts: landed, removed with the comment, dropped). An entry
 * after a leave reads as "came back". Oldest first: it is a story.
 *
 * Records are stored JSON written by whichever version ran: read leniently, an odd one is skipped.
 */
import type { DecisionRecord } from '../../state/index.ts';
import { queueEventWords, type QueueEventRecord, type RemovalCode } from './queue-events.ts';

export interface QueueStoryLine {
  /** When (ISO 8601). */
  at: string;
  kind: 'entered' | 'came_back' | 'landed' | 'removed' | 'dropped';
  /** The line in words, without the time. */
  text: string;
  /** Removed or dropped: the reason code. */
  code?: RemovalCode;
  /** Landed: the commit the target is at with it. */
  commit?: string;
  /** Landed by a train: its car. */
  car?: { position: number; members: number[] };
  mode?: 'serial' | 'train';
  /** Removed: the comment the bot posted. */
  comment?: string;
  /** The decision that tells it. */
  decision?: string;
}

const object = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

/** The queue event a record holds, if it is one. */
export function queueEventOf(record: DecisionRecord): QueueEventRecord | undefined {
  const event = object(object(record.decision)?.queueEvent);
  if (!event || typeof event.kind !== 'string' || typeof event.queue !== 'string') return undefined;
  return event as unknown as QueueEventRecord;
}

const iso = (ms: number): string => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

/** The lines one record tells (usually none or one). */
function linesOf(record: DecisionRecord, left: boolean): QueueStoryLine[] {
  const id = record.id === undefined ? {} : { decision: record.id };
  const event = queueEventOf(record);
  if (event) {
    const { headline, detail } = queueEventWords(event);
    return [
      {
        at: iso(event.at ?? record.at),
        kind: event.kind,
        text: `${headline.replace(/^merge queue: /, '')}: ${detail}`,
        ...(event.code ? { code: event.code } : {}),
        ...(event.commit ? { commit: event.commit } : {}),
        ...(event.car ? { car: event.car } : {}),
        ...(event.mode ? { mode: event.mode } : {}),
        ...(event.comment ? { comment: event.comment.body } : {}),
        ...id,
      },
    ];
  }
  const decision = object(record.decision);
  const lines: QueueStoryLine[] = [];
  const calls = object(decision?.execution)?.calls;
  for (const call of Array.isArray(calls) ? calls : []) {
    const one = object(call);
    if (one?.op !== 'mergeQueue.enqueue' || one.status !== 'done') continue;
    const detail = typeof one.detail === 'string' ? one.detail : '';
    // An update of its entry (priority, options) is no new entry.
    if (!detail.startsWith('queued')) continue;
    const back = left || detail.startsWith('queued again');
    lines.push({
      at: iso(record.at),
      kind: back ? 'came_back' : 'entered',
      text: `${back ? 'came back' : 'entered'}: ${detail}`,
      ...id,
    });
  }
  if (typeof decision?.leftQueue === 'string')
    lines.push({
      at: iso(record.at),
      kind: 'dropped',
      code: 'rule_stopped',
      text: decision.leftQueue,
      ...id,
    });
  return lines;
}

/**
 * The story from an item's kept decisions, newest first as the store gives them; oldest first. Two
 * recorded in the same millisecond keep the store's order.
 */
export function queueStory(records: readonly DecisionRecord[]): QueueStoryLine[] {
  const story: QueueStoryLine[] = [];
  let left = false;
  for (const record of [...records].reverse().sort((a, b) => a.at - b.at)) {
    for (const line of linesOf(record, left)) {
      story.push(line);
      if (line.kind === 'removed' || line.kind === 'dropped') left = true;
      if (line.kind === 'entered' || line.kind === 'came_back' || line.kind === 'landed') left = false;
    }
  }
  return story;
}

/** The story in lines of text, for explain: `2026-...Z  merged by the serial queue: ...`. */
export function queueStoryText(story: readonly QueueStoryLine[]): string[] {
  return story.flatMap((line) => [
    `  ${line.at}  ${line.text}`,
    ...(line.comment ? [`      comment: ${line.comment.split('\n')[0]}`] : []),
  ]);
}
