/**
 * The project activity feed (docs/api-v3.md#project-event). Every family records what it does with
 * `recordEvent`; `GET /projects/:id/events` shows the records with `eventView`.
 *
 * `action_name` values as real 8.x servers word them: `created` (project), `opened`, `closed`,
 * `reopened`, `accepted` (merged MR), `commented on`, `pushed to`, `pushed new`, `deleted` (ref),
 * `joined`, `left`.
 */
import type { SandboxContext } from './context.ts';
import type { Db, EventRec, NoteRec } from './db.ts';
import { userSummary } from './views.ts';

export interface NewEvent {
  project_id: number;
  author_id: number;
  action_name: string;
  target_id?: number | null;
  /** `Issue`, `MergeRequest`, `Note`, `Milestone`, or null (pushes, joins). */
  target_type?: string | null;
  target_title?: string | null;
  title?: string | null;
  /** Push data (docs/api-v3.md#events), else null. */
  data?: Record<string, unknown> | null;
  /** For `Note` events: the note shown in the event's `note` field. */
  note_id?: number | null;
}

/** Appends an event and, as real servers do, bumps the project's `last_activity_at`. */
export function recordEvent(db: Db, input: NewEvent): EventRec {
  const event: EventRec = {
    id: db.nextId('events'),
    project_id: input.project_id,
    author_id: input.author_id,
    action_name: input.action_name,
    target_id: input.target_id ?? null,
    target_type: input.target_type ?? null,
    target_title: input.target_title ?? null,
    title: input.title ?? null,
    data: input.data ?? null,
    note_id: input.note_id ?? (input.target_type === 'Note' ? (input.target_id ?? null) : null),
    created_at: db.now(),
  };
  db.data.events.push(event);
  const project = db.data.projects.find((p) => p.id === input.project_id);
  if (project) project.last_activity_at = event.created_at;
  db.changed();
  return event;
}

/** Real 8.x servers count a note whose body starts with +1 or :+1: as an upvote (likewise down). */
function noteView(ctx: SandboxContext, note: NoteRec) {
  const body = note.body.trim();
  return {
    id: note.id,
    body: note.body,
    attachment: null as string | null,
    author: userSummary(ctx, note.author_id),
    created_at: note.created_at,
    system: note.system,
    upvote: /^(\+1|:\+1:|:thumbsup:)/.test(body),
    downvote: /^(-1|:-1:|:thumbsdown:)/.test(body),
    noteable_id: note.noteable_id,
    noteable_type: note.noteable_type,
  };
}

export function eventView(ctx: SandboxContext, event: EventRec) {
  const author = ctx.db.data.users.find((u) => u.id === event.author_id);
  const view: Record<string, unknown> = {
    title: event.title,
    project_id: event.project_id,
    action_name: event.action_name,
    target_id: event.target_id,
    target_type: event.target_type,
    author_id: event.author_id,
    data: event.data,
    target_title: event.target_title,
    created_at: event.created_at,
  };
  if (event.target_type === 'Note') {
    const note = ctx.db.data.notes.find((n) => n.id === event.note_id);
    view.note = note ? noteView(ctx, note) : null;
  }
  view.author = userSummary(ctx, event.author_id);
  view.author_username = author?.username ?? null;
  return view;
}
