/**
 * The system notes a push to the source branch of open merge requests leaves on them, as the last 8.x
 * releases write them (`MergeRequests::RefreshService`: `find_new_commits`,
 * `comment_mr_branch_presence_changed`, `comment_mr_with_commits`; `SystemNoteService`;
 * docs/server-behaviour.md#system-notes-of-a-push):
 *
 * - the branch deleted: `Deleted source branch \`name\``; made (again): `Restored source branch
 *   \`name\``. 8.x capitalises the sentence with Ruby's `capitalize`, which also lowers every other
 *   letter: the name shows in lower case (ASCII letters only, as Ruby 2.3 lowers them);
 * - `Added N commit(s):` with the commits the push brought, oldest first, when it brought any: a
 *   reset to an older commit, a deletion, and a branch made again at a commit the merge request's
 *   current version has already (or after a deletion, whose version has no head) write none. For a
 *   branch made (again) the commits are those between the head of the merge request's version before
 *   the push and the new head. Commits already in the target branch are summed up on one line
 *   (`* 1a2b3c4d...5e6f7a8b9c0 - 2 commits from branch \`master\``), the others listed one a line,
 *   their titles HTML-escaped.
 */
import type { GitCommit, PushEvent, SandboxContext } from './context.ts';
import type { MergeRequestRec, UserRec } from './db.ts';
import { inStateScope } from './issuables.ts';
import { latestVersion } from './merge-request-versions.ts';
import { addSystemNote } from './routes/notes.ts';

const NULL_SHA = '0000000000000000000000000000000000000000';

/** The open merge requests from the pushed branch: the project's own first, then its forks' (8.x order). */
export function sourceMergeRequests(ctx: SandboxContext, push: PushEvent, branch: string): MergeRequestRec[] {
  const db = ctx.db;
  const from = db.data.mergeRequests.filter(
    (mr) =>
      !mr.deleted &&
      inStateScope(mr.state, 'opened') &&
      mr.source_project_id === push.project.id &&
      mr.source_branch === branch &&
      db.data.projects.some((p) => p.id === mr.target_project_id),
  );
  const newestFirst = (a: MergeRequestRec, b: MergeRequestRec) => b.id - a.id;
  const own = from.filter((mr) => mr.target_project_id === push.project.id).sort(newestFirst);
  const forks = from.filter((mr) => mr.target_project_id !== push.project.id).sort(newestFirst);
  return [...own, ...forks];
}

/** Ruby's `String#capitalize` of 8.x's Ruby (2.x before 2.4): the first letter up, every other ASCII letter down. */
function capitalize(text: string): string {
  const lower = text.replace(/[A-Z]/g, (c) => c.toLowerCase());
  return lower.charAt(0).toUpperCase() + lower.slice(1);
}

/** Rack's `escape_html`, which 8.x applies to each commit title of the note. */
function escapeHtml(text: string): string {
  const map: Record<string, string> = {
    '&': '&amp;',
    '<': '&lt;',
    '>': '&gt;',
    "'": '&#x27;',
    '"': '&quot;',
    '/': '&#x2F;',
  };
  return text.replace(/[&<>'"/]/g, (c) => map[c]!);
}

const countOf = (n: number) => `${n} commit${n === 1 ? '' : 's'}`;

/** 8.x `existing_commit_summary`: the commits the target branch already has, on one line. */
function existingSummary(ctx: SandboxContext, mr: MergeRequestRec, existing: GitCommit[], oldrev: string) {
  if (existing.length === 0) return '';
  const ids =
    existing.length === 1
      ? existing[0]!.short_id
      : oldrev !== NULL_SHA
        ? `${oldrev.slice(0, 8)}...${existing.at(-1)!.short_id}`
        : `${existing[0]!.short_id}..${existing.at(-1)!.short_id}`;
  let branch = mr.target_branch;
  if (mr.source_project_id !== mr.target_project_id) {
    const target = ctx.db.data.projects.find((p) => p.id === mr.target_project_id);
    const namespace = ctx.db.data.namespaces.find((n) => n.id === target?.namespace_id);
    branch = `${namespace?.path ?? '(removed)'}:${branch}`;
  }
  return `* ${ids} - ${countOf(existing.length)} from branch \`${branch}\`\n`;
}

/** 8.x `find_new_commits`: what the push brought, oldest first. */
async function newCommits(
  ctx: SandboxContext,
  push: PushEvent,
  priorHead: string | null | undefined,
): Promise<GitCommit[]> {
  if (push.after === NULL_SHA) return [];
  // A branch made (again): from the head the merge request's version had (none after a deletion:
  // 8.x's merge base of nothing fails, and it finds no commits).
  const from = push.before === NULL_SHA ? priorHead : push.before;
  if (!from) return [];
  const id = push.project.id;
  const { commits } = await ctx.git.compare(id, from, id, push.after, { diffs: false });
  return commits.reverse();
}

/**
 * Writes the notes of one push on the open merge requests from the pushed branch. `priorHeads`: the
 * head of each one's current version before the push made a new one.
 */
export async function noteSourceBranchPush(
  ctx: SandboxContext,
  push: PushEvent,
  mrs: MergeRequestRec[],
  priorHeads: Map<number, string | null>,
): Promise<void> {
  if (mrs.length === 0) return;
  const user: UserRec = push.user;
  const added = push.before === NULL_SHA;
  const removed = push.after === NULL_SHA;
  // 8.x reads the first merge request's version only, for all of them.
  const commits = await newCommits(ctx, push, priorHeads.get(mrs[0]!.id));
  const branch = push.ref.slice('refs/heads/'.length);
  for (const mr of mrs) {
    const project = ctx.db.data.projects.find((p) => p.id === mr.project_id);
    if (!project) continue;
    if (added || removed)
      addSystemNote(
        ctx,
        project,
        'MergeRequest',
        mr,
        user,
        capitalize(`${added ? 'restored' : 'deleted'} source branch \`${branch}\``),
      );
    if (commits.length === 0) continue;
    // New: in the merge request's commits now; existing: the target branch had them already.
    const ofMr = new Set(latestVersion(ctx, mr)?.commit_shas ?? []);
    const fresh = commits.filter((c) => ofMr.has(c.id));
    const existing = commits.filter((c) => !ofMr.has(c.id));
    const lines = fresh.map((c) => `* ${c.short_id} - ${escapeHtml(c.title)}`).join('\n');
    addSystemNote(
      ctx,
      project,
      'MergeRequest',
      mr,
      user,
      `Added ${countOf(commits.length)}:\n\n${existingSummary(ctx, mr, existing, push.before)}${lines}`,
    );
  }
}
