/**
 * The comment a queue entry or a watch entry keeps (docs/rules.md#members-commands): a note trigger
 * of the call, as the executor keeps triggers; the queue's and the watch's merges are checked again
 * under it. Other triggers are not kept.
 */
import type { CommentTrigger } from '../../state/index.ts';
import type { Trigger } from '../engine/snapshot.ts';

export function commentTrigger(trigger: Trigger | undefined): CommentTrigger | undefined {
  if (trigger?.kind !== 'note' || trigger.noteId === undefined) return undefined;
  return {
    kind: 'note',
    noteId: trigger.noteId,
    byBot: trigger.byBot,
    ...(trigger.events !== undefined ? { events: trigger.events.map((event) => ({ ...event })) } : {}),
  };
}
