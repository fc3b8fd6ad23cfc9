/**
 * Repository commits (docs/api-v3.md#commits): list, read, diff, and commit
 * comments with the comment placement rules. Commit statuses have their own family; this one only
 * reads them to give a commit its combined `status`.
 */
import type { Router } from 'express';
import type { GitCommit, SandboxContext } from '../context.ts';
import type { NoteRec, ProjectRec } from '../db.ts';
import { recordEvent } from '../events.ts';
import { notFound, requiredStr, sendPage, str } from '../http.ts';
import { combinedStatus, latestOf, notePayload, rememberCommits } from '../payloads/index.ts';
import { userSummary, userSummaryMr } from '../views.ts';
import { requireCodeAccess } from './branches.ts';
import { projectRoute } from '../route.ts';

/** docs/api-v3.md#commit, list form (`allow_failure` is in the list form of the contract; it is always false here). */
export function commitListView(commit: GitCommit) {
  return {
    id: commit.id,
    short_id: commit.short_id,
    title: commit.title,
    author_name: commit.author_name,
    author_email: commit.author_email,
    // gitlab_git's `created_at` of a commit is its committed date.
    created_at: commit.committed_date,
    message: commit.message,
    allow_failure: false,
  };
}

/** The new-side line numbers a file's diff adds (`+` lines): where a comment may be attached. */
export function addedLines(diff: string): Set<number> {
  const added = new Set<number>();
  let next: number | undefined;
  for (const line of diff.split('\n')) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      next = Number(hunk[1]);
      continue;
    }
    if (next === undefined) continue; // the `---`/`+++` lines before the first hunk
    if (line.startsWith('+')) added.add(next++);
    else if (line.startsWith(' ')) next++;
  }
  return added;
}

export function registerCommitRoutes(router: Router, ctx: SandboxContext): void {
  const { db } = ctx;
  const COMMITS = '/projects/:id/repository/commits';

  function commentView(note: NoteRec, form: 'list' | 'create') {
    return {
      note: note.body,
      path: note.path,
      line: note.line,
      line_type: note.line_type,
      // docs/api-v3.md#commits: a list shows the longer author (with email and created_at).
      author: form === 'list' ? userSummaryMr(ctx, note.author_id) : userSummary(ctx, note.author_id),
      created_at: note.created_at,
    };
  }

  async function commitOf(project: ProjectRec, sha: string) {
    const commit = await ctx.git.commit(project.id, sha);
    if (!commit) throw notFound('Commit');
    return commit;
  }

  router.get(
    COMMITS,
    projectRoute(db, requireCodeAccess, async ({ req, res, p, project }) => {
      // An unknown ref lists nothing (real servers answer an empty array, not a 404).
      const ref = str(p, 'ref_name') || project.default_branch;
      const commits = await ctx.git.log(project.id, ref);
      sendPage(req, res, commits.map(commitListView));
    }),
  );

  router.get(
    `${COMMITS}/:sha`,
    projectRoute(db, requireCodeAccess, async ({ req, res, project }) => {
      const commit = await commitOf(project, String(req.params.sha));
      // The combined status of the commit's latest statuses (per name and ref), as 8.x combines them.
      const status = combinedStatus(
        latestOf(db.data.statuses.filter((s) => s.project_id === project.id && s.sha === commit.id)),
      );
      const { allow_failure: _omitted, ...listed } = commitListView(commit);
      res.json({
        ...listed,
        committed_date: commit.committed_date,
        authored_date: commit.authored_date,
        parent_ids: commit.parent_ids,
        status: status === 'none' ? null : status,
      });
    }),
  );

  router.get(
    `${COMMITS}/:sha/diff`,
    projectRoute(db, requireCodeAccess, async ({ req, res, project }) => {
      const commit = await commitOf(project, String(req.params.sha));
      sendPage(req, res, await ctx.git.diff(project.id, commit.id));
    }),
  );

  router.get(
    `${COMMITS}/:sha/comments`,
    projectRoute(db, requireCodeAccess, async ({ req, res, project }) => {
      const commit = await commitOf(project, String(req.params.sha));
      const notes = db.data.notes
        .filter(
          (n) => n.project_id === project.id && n.noteable_type === 'Commit' && n.commit_id === commit.id,
        )
        .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id - b.id);
      sendPage(
        req,
        res,
        notes.map((n) => commentView(n, 'list')),
      );
    }),
  );

  router.post(
    `${COMMITS}/:sha/comments`,
    projectRoute(db, requireCodeAccess, async ({ req, res, who, p, project }) => {
      const sha = String(req.params.sha);
      const commit = await commitOf(project, sha);
      const body = requiredStr(p, 'note');
      const place = await placement(ctx, project.id, commit, sha, p);
      const now = db.now();
      const note: NoteRec = {
        id: db.nextId('notes'),
        project_id: project.id,
        body,
        author_id: who.user.id,
        noteable_type: 'Commit',
        noteable_id: null,
        commit_id: commit.id,
        path: place?.path ?? null,
        line: place?.line ?? null,
        line_type: place ? 'new' : null,
        system: false,
        created_at: now,
        updated_at: now,
      };
      db.data.notes.push(note);
      // Real servers record a comment in the activity feed (`commented on`, target `Note`).
      recordEvent(db, {
        project_id: project.id,
        author_id: who.user.id,
        action_name: 'commented on',
        target_id: note.id,
        target_type: 'Note',
        note_id: note.id,
      });
      db.changed();
      // The payload builders are synchronous: hand them the commit so the note's `commit` is complete.
      rememberCommits(ctx, [commit]);
      ctx.hooks.emit(project.id, 'Note Hook', notePayload(ctx, note, who.user));
      res.status(201).json(commentView(note, 'create'));
    }),
  );
}

/**
 * docs/api-v3.md#comment-placement-rules: a comment lands on a file line only when `sha` is the full
 * commit SHA and `path`, `line` and `line_type=new` name a line the commit's diff adds (real 8.x
 * servers match the diff's `new` lines the same way). Anything else (a branch or tag name, an
 * unknown path, a line that is not there, a non-numeric line) puts it at the end of the commit,
 * with `path`, `line` and `line_type` null. Undefined means "at the end".
 */
async function placement(
  ctx: SandboxContext,
  projectId: number,
  commit: GitCommit,
  sha: string,
  p: Record<string, unknown>,
): Promise<{ path: string; line: number } | undefined> {
  if (sha.toLowerCase() !== commit.id) return undefined;
  const path = typeof p.path === 'string' ? p.path : undefined;
  const line = Number(typeof p.line === 'number' || typeof p.line === 'string' ? p.line : Number.NaN);
  if (!path || !Number.isInteger(line) || p.line_type !== 'new') return undefined;
  const entry = (await ctx.git.diff(projectId, commit.id)).find(
    (d) => d.new_path === path && !d.deleted_file,
  );
  return entry && addedLines(entry.diff).has(line) ? { path, line } : undefined;
}
