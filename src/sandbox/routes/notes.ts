/**
 * Comments on issues and merge requests (the notes resource; docs/api-v3.md#notes shows only the list path, the
 * rest follows real 8.x `lib/api/notes.rb`): list, read one, create, edit. A comment fires `Note Hook` and
 * leaves a `commented on` event; the system notes the sandbox writes itself (status changes, moves)
 * fire nothing, as on real servers.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { MergeRequestRec, NoteRec, ProjectRec, UserRec } from '../db.ts';
import { forbidden, notFound, requiredStr, sendPage } from '../http.ts';
import {
  canReadMergeRequest,
  findIssue,
  findMergeRequest,
  timestampParam,
  type Issuable,
  type IssuableType,
} from '../issuables.ts';
import { recordEvent } from '../events.ts';
import { checkMergeStatus } from '../merge-request-view.ts';
import { notePayload } from '../payloads/index.ts';
import { MASTER, OWNER } from '../permissions.ts';
import { userSummary } from '../views.ts';
import { projectRoute, type ProjectRouteCall } from '../route.ts';

export function noteView(ctx: SandboxContext, note: NoteRec) {
  return {
    id: note.id,
    body: note.body,
    attachment: null,
    author: userSummary(ctx, note.author_id),
    created_at: note.created_at,
    updated_at: note.updated_at,
    system: note.system,
    noteable_id: note.noteable_id,
    noteable_type: note.noteable_type,
    // Deprecated on real 8.x servers: always false.
    upvote: false,
    downvote: false,
  };
}

function newNote(
  ctx: SandboxContext,
  input: { project: ProjectRec; type: IssuableType; item: Issuable; author: UserRec; body: string },
  options: { system: boolean; created_at?: string },
): NoteRec {
  const now = ctx.db.now();
  const note: NoteRec = {
    id: ctx.db.nextId('notes'),
    project_id: input.project.id,
    body: input.body,
    author_id: input.author.id,
    noteable_type: input.type,
    noteable_id: input.item.id,
    commit_id: null,
    path: null,
    line: null,
    line_type: null,
    system: options.system,
    created_at: options.created_at ?? now,
    updated_at: now,
  };
  ctx.db.data.notes.push(note);
  // Real notes `touch` their noteable: a comment bumps the issue's or MR's updated_at.
  input.item.updated_at = now;
  ctx.db.changed();
  return note;
}

/**
 * A system note (`Status changed to closed`, `Moved to ...`): listed with the comments, `system: true`,
 * no hook and no event, as real servers write them.
 */
export function addSystemNote(
  ctx: SandboxContext,
  project: ProjectRec,
  type: IssuableType,
  item: Issuable,
  author: UserRec,
  body: string,
): NoteRec {
  return newNote(ctx, { project, type, item, author, body }, { system: true });
}

/** A user's comment: stored, `Note Hook` fired (bots' own comments too: real servers fire it for every non-system note), event recorded. */
export function addComment(
  ctx: SandboxContext,
  input: { project: ProjectRec; type: IssuableType; item: Issuable; author: UserRec; body: string },
  createdAt?: string,
): NoteRec {
  const note = newNote(ctx, input, { system: false, created_at: createdAt });
  recordEvent(ctx.db, {
    project_id: input.project.id,
    author_id: input.author.id,
    action_name: 'commented on',
    target_id: note.id,
    target_type: 'Note',
    note_id: note.id,
  });
  ctx.hooks.emit(input.project.id, 'Note Hook', notePayload(ctx, note, input.author));
  return note;
}

const NOTEABLES = [
  { path: 'issues', param: 'issue_id', type: 'Issue' },
  { path: 'merge_requests', param: 'merge_request_id', type: 'MergeRequest' },
] as const;

export function registerNoteRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  for (const noteable of NOTEABLES) {
    const base = `/projects/:id/${noteable.path}/:${noteable.param}/notes`;
    /**
     * The noteable of the route's project, which the caller must be able to read (404 otherwise):
     * 8.x reads and writes a noteable's notes only for who may read it (from 8.14.7 and 8.15.5 on
     * creation too), so a confidential issue's notes are its readers', and a private project's
     * merge requests' notes are not its guests' (read_merge_request, issuables.ts).
     */
    const itemOf = ({ req, who, project }: ProjectRouteCall, what: 'Note' | 'Notes') => {
      const itemRef = String(req.params[noteable.param]);
      if (noteable.type === 'Issue') return findIssue(ctx, project, itemRef, who.user);
      const mr = findMergeRequest(ctx, project, itemRef);
      if (!canReadMergeRequest(ctx, project, mr, who.user)) throw notFound(what);
      return mr;
    };
    const notesOf = (item: Issuable) =>
      db.data.notes
        .filter((n) => n.noteable_type === noteable.type && n.noteable_id === item.id)
        .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id - b.id);

    // Oldest first, as real 8.x servers list a noteable's notes.
    router.get(
      base,
      projectRoute(db, 'visible', (call) => {
        const { req, res } = call;
        const item = itemOf(call, 'Notes');
        sendPage(
          req,
          res,
          notesOf(item).map((n) => noteView(ctx, n)),
        );
      }),
    );

    router.get(
      `${base}/:note_id`,
      projectRoute(db, 'visible', (call) => {
        const { req, res } = call;
        const item = itemOf(call, 'Note');
        const note = notesOf(item).find((n) => String(n.id) === String(req.params.note_id));
        if (!note) throw notFound();
        res.json(noteView(ctx, note));
      }),
    );

    router.post(
      base,
      projectRoute(db, 'visible', async (call) => {
        const { res, who, p, project, level } = call;
        const item = itemOf(call, 'Note');
        // The Note Hook shows the merge request's merge_status: worked out first if it went stale.
        if (noteable.type === 'MergeRequest') await checkMergeStatus(ctx, item as MergeRequestRec);
        const body = requiredStr(p, 'body');
        // Real 8.x: `created_at` is honoured for admins and the project owner only.
        const createdAt = level >= OWNER ? timestampParam(p, 'created_at') : undefined;
        const note = addComment(
          ctx,
          { project, type: noteable.type, item, author: who.user, body },
          createdAt,
        );
        res.status(201).json(noteView(ctx, note));
      }),
    );

    // 8.x `PUT .../notes/:note_id`: a new body for a comment, by its author or a master (real
    // servers' `admin_note`); fires no hook (real servers fire Note Hook on creation only).
    router.put(
      `${base}/:note_id`,
      projectRoute(db, 'visible', (call) => {
        const { req, res, who, p, level } = call;
        const item = itemOf(call, 'Note');
        const note = notesOf(item).find((n) => String(n.id) === String(req.params.note_id));
        if (!note || note.system) throw notFound();
        const body = requiredStr(p, 'body');
        if (note.author_id !== who.user.id && !who.user.is_admin && level < MASTER) throw forbidden();
        note.body = body;
        note.updated_at = db.now();
        db.changed();
        res.json(noteView(ctx, note));
      }),
    );
  }
}
