/** Event names rules listen to (`on:`) and test (`event:`), and the name of a trigger. */
import type { Trigger, TriggerEvent } from './snapshot.ts';

export const ISSUE_EVENTS = ['issue.open', 'issue.update', 'issue.close', 'issue.reopen'] as const;
export const MERGE_REQUEST_EVENTS = [
  'merge_request.open',
  'merge_request.update',
  'merge_request.close',
  'merge_request.reopen',
  'merge_request.merge',
] as const;

/** Every name `on:` accepts; `issue.*` and `merge_request.*` stand for all actions of the kind. */
export const LISTENABLE_EVENTS = [
  ...ISSUE_EVENTS,
  'issue.*',
  ...MERGE_REQUEST_EVENTS,
  'merge_request.*',
  'note.created',
  'status.changed',
  'push',
] as const;

/** `event:` also sees sweeps and manual runs. */
export const EVENT_NAMES = [...LISTENABLE_EVENTS, 'schedule', 'manual'] as const;

/** `issue.open`, `note.created`, `status.changed`, `push`, `schedule`, `manual`. */
export function triggerEventName(trigger: Trigger): string {
  switch (trigger.kind) {
    case 'issue':
    case 'merge_request':
      return `${trigger.kind}.${trigger.action ?? 'update'}`;
    case 'note':
      return 'note.created';
    case 'status':
      return 'status.changed';
    default:
      return trigger.kind;
  }
}

/** Whether `pattern` (a name or `kind.*`) covers the event `name`. */
export function eventMatches(pattern: string, name: string): boolean {
  return pattern.endsWith('.*') ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

/** Every event of the trigger: the burst's set, or the one event it names. */
export function triggerEvents(trigger: Trigger): readonly TriggerEvent[] {
  return trigger.events ?? [{ name: triggerEventName(trigger), byBot: trigger.byBot }];
}

/**
 * The union of the events of several triggers, each name and bot flag once, in arrival order: a
 * coalesced burst keeps every event it folds.
 */
export function unionEvents(triggers: readonly Trigger[]): TriggerEvent[] {
  const seen = new Set<string>();
  const all: TriggerEvent[] = [];
  for (const trigger of triggers)
    for (const event of triggerEvents(trigger)) {
      const key = `${event.name}|${event.byBot ? 1 : 0}`;
      if (seen.has(key)) continue;
      seen.add(key);
      all.push({ name: event.name, byBot: event.byBot });
    }
  return all;
}
