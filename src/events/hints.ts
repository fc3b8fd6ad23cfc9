/**
 * A delivery is a hint that something changed, never the truth (issue 4): this turns a typed event
 * into what to re-read. An issue or MR event names its item; a note names the issue or MR it is on;
 * a push names a branch (its open MRs get re-read); a build or pipeline names a commit (the open MRs
 * whose head it is get re-read).
 */
import type { HookEvent } from './schemas.ts';
import { parseTimestamp } from './timestamps.ts';

/** Who caused the event. Payloads of that era name users by username (and sometimes id). */
export interface Actor {
  id?: number;
  username?: string;
}

export type TriggerKind = 'issue' | 'merge_request' | 'note' | 'push' | 'status';

export interface Trigger {
  kind: TriggerKind;
  /** open, update, close, reopen, merge (issues and MRs); created (notes); the build/pipeline status. */
  action?: string;
  actor: Actor;
  /** The comment text, for notes. */
  note?: string;
  noteId?: number;
  /** When the event happened, in ms, when the payload says. */
  at?: number;
}

export type ItemType = 'issue' | 'merge_request';

export interface ItemRef {
  type: ItemType;
  projectId: number;
  /** The global id: the one API paths use (never the iid). */
  id: number;
}

export type Hint =
  | { target: 'item'; item: ItemRef; trigger: Trigger }
  | { target: 'branch'; projectId: number; branch: string; trigger: Trigger }
  /** `project` is an id, or a `namespace/path` when the payload names no id (8.x pipeline hooks). */
  | { target: 'commit'; project: number | string; sha: string; ref?: string; trigger: Trigger };

/** `issue:12:345`, the key under which events for one item coalesce and decisions are kept. */
export function itemKey(item: ItemRef): string {
  return `${item.type}:${item.projectId}:${item.id}`;
}

export function hintsOf(event: HookEvent): Hint[] {
  switch (event.kind) {
    case 'issue': {
      const a = event.payload.object_attributes;
      const trigger: Trigger = {
        kind: 'issue',
        actor: { username: event.payload.user?.username },
        at: parseTimestamp(a.updated_at),
      };
      if (a.action) trigger.action = a.action;
      return [{ target: 'item', item: { type: 'issue', projectId: a.project_id, id: a.id }, trigger }];
    }
    case 'merge_request': {
      const a = event.payload.object_attributes;
      const trigger: Trigger = {
        kind: 'merge_request',
        actor: { username: event.payload.user?.username },
        at: parseTimestamp(a.updated_at),
      };
      if (a.action) trigger.action = a.action;
      return [
        {
          target: 'item',
          item: { type: 'merge_request', projectId: a.target_project_id, id: a.id },
          trigger,
        },
      ];
    }
    case 'note': {
      const p = event.payload;
      const a = p.object_attributes;
      const trigger: Trigger = {
        kind: 'note',
        action: 'created',
        actor: { id: a.author_id, username: p.user?.username },
        note: a.note,
        noteId: a.id,
        at: parseTimestamp(a.created_at),
      };
      if (a.noteable_type === 'Issue') {
        const issueId = p.issue?.id ?? a.noteable_id;
        return issueId
          ? [{ target: 'item', item: { type: 'issue', projectId: p.project_id, id: issueId }, trigger }]
          : [];
      }
      if (a.noteable_type === 'MergeRequest') {
        const mrId = p.merge_request?.id ?? a.noteable_id;
        return mrId
          ? [{ target: 'item', item: { type: 'merge_request', projectId: p.project_id, id: mrId }, trigger }]
          : [];
      }
      const sha = p.commit?.id ?? a.commit_id;
      if (a.noteable_type === 'Commit' && sha)
        return [{ target: 'commit', project: p.project_id, sha, trigger }];
      return []; // snippet notes concern no issue or MR
    }
    case 'push': {
      const p = event.payload;
      if (!p.ref.startsWith('refs/heads/') || /^0+$/.test(p.after)) return []; // a deleted branch has no MR to refresh
      const trigger: Trigger = {
        kind: 'push',
        action: 'push',
        actor: p.user_id === undefined ? {} : { id: p.user_id },
      };
      return [
        { target: 'branch', projectId: p.project_id, branch: p.ref.slice('refs/heads/'.length), trigger },
      ];
    }
    case 'build': {
      const p = event.payload;
      const trigger: Trigger = { kind: 'status', action: p.build_status, actor: { id: p.user?.id } };
      return [{ target: 'commit', project: p.project_id, sha: p.sha, ref: p.ref, trigger }];
    }
    case 'pipeline': {
      const p = event.payload;
      // The pipeline's `user` is whoever created it (its first status), not whoever changed it now:
      // it says nothing about who caused this event, so it takes no part in loop prevention.
      const trigger: Trigger = { kind: 'status', action: p.object_attributes.status, actor: {} };
      const project = projectOf(p);
      if (project === undefined) return [];
      const hint: Hint = { target: 'commit', project, sha: p.object_attributes.sha, trigger };
      if (p.object_attributes.ref) hint.ref = p.object_attributes.ref;
      return [hint];
    }
    case 'tag_push':
    case 'wiki_page':
      return [];
  }
}

/** 8.x pipeline payloads carry the project's attributes without its id: fall back to its path. */
function projectOf(payload: { project?: Record<string, unknown> | undefined }): number | string | undefined {
  const id = payload.project?.id;
  if (typeof id === 'number') return id;
  const path = payload.project?.path_with_namespace;
  return typeof path === 'string' && path.length > 0 ? path : undefined;
}
