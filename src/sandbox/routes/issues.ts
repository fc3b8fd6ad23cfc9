/**
 * Issues (docs/api-v3.md#issues and its state table): lists, read, create, edit (close and reopen), soft
 * delete, move to another project, subscribe and unsubscribe. Where docs/api-v3.md#issues is silent the behaviour
 * follows real 8.x `lib/api/issues.rb` and the issue services, as the comments say.
 */
import type { Router } from 'express';
import type { SandboxContext } from '../context.ts';
import type { IssueRec, ProjectRec, UserRec } from '../db.ts';
import {
  flag,
  forbidden,
  HttpError,
  int,
  list,
  notFound,
  requiredInt,
  requiredStr,
  sendPage,
  str,
} from '../http.ts';
import { addIssueRecord } from '../factories.ts';
import { issueView } from '../issue-view.ts';
import {
  assigneeParam,
  canReadIssue,
  canUpdateIssue,
  checkTitle,
  findIssue,
  given,
  hasAllLabels,
  inStateScope,
  milestoneParam,
  orderIssuables,
  setSubscribed,
  timestampParam,
} from '../issuables.ts';
import { recordEvent } from '../events.ts';
import { issuePayload } from '../payloads/index.ts';
import { canAdminIssues, canRead, OWNER, pathWithNamespace } from '../permissions.ts';
import { ensureLabels, labelsParam } from './labels.ts';
import { addSystemNote } from './notes.ts';
import { projectRoute, route, type ProjectRouteCall } from '../route.ts';

export interface NewIssueInput {
  title: string;
  description: string | null;
  author: UserRec;
  assignee_id: number | null;
  milestone_id: number | null;
  labels: string[];
  confidential: boolean;
  created_at?: string;
}

/** Creates an issue (labels created on the fly), records `opened` and fires `Issue Hook` `open`. */
export function createIssue(
  ctx: SandboxContext,
  project: ProjectRec,
  input: NewIssueInput,
  actor: UserRec,
): IssueRec {
  const db = ctx.db;
  const issue = addIssueRecord(db, {
    project_id: project.id,
    title: input.title,
    description: input.description,
    author_id: input.author.id,
    assignee_id: input.assignee_id,
    milestone_id: input.milestone_id,
    labels: ensureLabels(ctx, project, input.labels, actor),
    confidential: input.confidential,
    created_at: input.created_at,
  });
  db.changed();
  recordEvent(ctx.db, {
    project_id: project.id,
    author_id: actor.id,
    action_name: 'opened',
    target_id: issue.id,
    target_type: 'Issue',
    target_title: issue.title,
  });
  ctx.hooks.emit(project.id, 'Issue Hook', issuePayload(ctx, issue, actor, 'open'));
  return issue;
}

/**
 * Closes or reopens an issue; false (and nothing happens) when it already is so, as the real state
 * machine refuses the transition. Leaves a system note, an event and an `Issue Hook`. `closedBy` names
 * what closed it (`!3` for a merge request), as real system notes do.
 */
export function setIssueState(
  ctx: SandboxContext,
  project: ProjectRec,
  issue: IssueRec,
  user: UserRec,
  event: 'close' | 'reopen',
  closedBy?: string,
): boolean {
  const open = inStateScope(issue.state, 'opened');
  if ((event === 'close') !== open) return false;
  // The state table (docs/api-v3.md#states-and-transitions): reopen leads to `opened` (real 8.x issues answer `reopened`; the contract wins).
  issue.state = event === 'close' ? 'closed' : 'opened';
  issue.updated_at = ctx.db.now();
  const status = event === 'close' ? 'closed' : 'reopened';
  addSystemNote(
    ctx,
    project,
    'Issue',
    issue,
    user,
    `Status changed to ${status}${closedBy ? ` by ${closedBy}` : ''}`,
  );
  recordEvent(ctx.db, {
    project_id: project.id,
    author_id: user.id,
    action_name: status,
    target_id: issue.id,
    target_type: 'Issue',
    target_title: issue.title,
  });
  ctx.db.changed();
  ctx.hooks.emit(project.id, 'Issue Hook', issuePayload(ctx, issue, user, event));
  return true;
}

/** A new issue in `target` with the old one's content; the old one is closed and points at it (real `Issues::MoveService`). */
function moveIssue(
  ctx: SandboxContext,
  from: ProjectRec,
  issue: IssueRec,
  target: ProjectRec,
  user: UserRec,
): IssueRec {
  const db = ctx.db;
  const milestone = db.data.milestones.find((m) => m.id === issue.milestone_id);
  const moved = createIssue(
    ctx,
    target,
    {
      title: issue.title,
      description: issue.description,
      author: db.data.users.find((u) => u.id === issue.author_id) ?? user,
      assignee_id: issue.assignee_id,
      milestone_id:
        db.data.milestones.find((m) => m.project_id === target.id && m.title === milestone?.title)?.id ??
        null,
      // Only the labels that exist in the target project travel (real `cloneable_label_ids`).
      labels: issue.labels.filter((name) =>
        db.data.labels.some((l) => l.project_id === target.id && l.title === name),
      ),
      confidential: issue.confidential,
      created_at: issue.created_at,
    },
    user,
  );
  // Real `MoveService` copies the old issue's attributes, its state included.
  if (!inStateScope(issue.state, 'opened')) moved.state = issue.state;
  // The comments travel too, with their authors and times.
  for (const note of db.data.notes.filter((n) => n.noteable_type === 'Issue' && n.noteable_id === issue.id))
    db.data.notes.push({ ...note, id: db.nextId('notes'), project_id: target.id, noteable_id: moved.id });
  addSystemNote(ctx, target, 'Issue', moved, user, `Moved from ${pathWithNamespace(db, from)}#${issue.iid}`);
  setIssueState(ctx, from, issue, user, 'close');
  addSystemNote(ctx, from, 'Issue', issue, user, `Moved to ${pathWithNamespace(db, target)}#${moved.iid}`);
  issue.moved_to_id = moved.id;
  db.changed();
  return moved;
}

export function registerIssueRoutes(router: Router, ctx: SandboxContext): void {
  const db = ctx.db;

  /** The issue `:issue_id` of the route's project, when the caller may see it (404 otherwise). */
  const issueOf = ({ req, who, project }: ProjectRouteCall) =>
    findIssue(ctx, project, String(req.params.issue_id), who.user);
  const projectOf = (issue: IssueRec) => db.data.projects.find((p) => p.id === issue.project_id);

  // Issues the caller created, in every project they can still see.
  router.get(
    '/issues',
    route(({ req, res, who, p }) => {
      const labels = list(p, 'labels');
      const issues = db.data.issues.filter((issue) => {
        const pr = projectOf(issue);
        return (
          issue.author_id === who.user.id &&
          !issue.deleted &&
          pr !== undefined &&
          canReadIssue(ctx, pr, issue, who.user) &&
          inStateScope(issue.state, str(p, 'state')) &&
          hasAllLabels(issue, labels)
        );
      });
      sendPage(
        req,
        res,
        orderIssuables(issues, str(p, 'order_by'), str(p, 'sort')).map((i) => issueView(ctx, i, who.user)),
      );
    }),
  );

  router.get(
    '/projects/:id/issues',
    projectRoute(db, 'visible', ({ req, res, who, p, project: pr }) => {
      const iid = int(p, 'iid');
      const labels = list(p, 'labels');
      const milestone = str(p, 'milestone');
      const milestoneIds = new Set(
        db.data.milestones.filter((m) => m.project_id === pr.id && m.title === milestone).map((m) => m.id),
      );
      const issues = db.data.issues.filter(
        (issue) =>
          issue.project_id === pr.id &&
          !issue.deleted &&
          canReadIssue(ctx, pr, issue, who.user) &&
          (iid === undefined || issue.iid === iid) &&
          inStateScope(issue.state, str(p, 'state')) &&
          hasAllLabels(issue, labels) &&
          (milestone === undefined || (issue.milestone_id !== null && milestoneIds.has(issue.milestone_id))),
      );
      sendPage(
        req,
        res,
        orderIssuables(issues, str(p, 'order_by'), str(p, 'sort')).map((i) => issueView(ctx, i, who.user)),
      );
    }),
  );

  router.get(
    '/projects/:id/issues/:issue_id',
    projectRoute(db, 'visible', (call) => {
      call.res.json(issueView(ctx, issueOf(call), call.who.user));
    }),
  );

  // docs/api-v3.md#issues: issue create answers 200 (real servers answer 201).
  router.post(
    '/projects/:id/issues',
    projectRoute(db, 'visible', ({ res, who, p, project: pr, level }) => {
      const title = requiredStr(p, 'title');
      checkTitle(title);
      const labels = labelsParam(p) ?? [];
      // Labels, assignee and milestone need `admin_issue` (reporter): 8.x `filter_params` drops the
      // three from anyone else, and no label is created for them
      // (docs/server-behaviour.md#labels-assignee-and-milestone-from-users-without-rights).
      const canAdmin = canAdminIssues(db, pr, who.user);
      const issue = createIssue(
        ctx,
        pr,
        {
          title,
          description: given(p, 'description') ?? null,
          author: who.user,
          assignee_id: canAdmin ? (assigneeParam(ctx, p) ?? null) : null,
          milestone_id: canAdmin ? (milestoneParam(ctx, pr, p) ?? null) : null,
          labels: canAdmin ? labels : [],
          confidential: flag(p, 'confidential') ?? false,
          // Real 8.x honours `created_at` from admins and the project owner only.
          created_at: level >= OWNER ? timestampParam(p, 'created_at') : undefined,
        },
        who.user,
      );
      res.status(200).json(issueView(ctx, issue, who.user));
    }),
  );

  router.put(
    '/projects/:id/issues/:issue_id',
    projectRoute(db, 'visible', (call) => {
      const { res, who, p, project: pr, level } = call;
      const issue = issueOf(call);
      if (!canUpdateIssue(ctx, pr, issue, who.user)) throw forbidden();
      const canAdmin = canAdminIssues(db, pr, who.user);
      const title = given(p, 'title');
      checkTitle(title);
      const labels = labelsParam(p);
      const edits = {
        title,
        description: given(p, 'description'),
        assignee_id: canAdmin ? assigneeParam(ctx, p) : undefined,
        milestone_id: canAdmin ? milestoneParam(ctx, pr, p) : undefined,
        labels: canAdmin ? labels : undefined,
        confidential: flag(p, 'confidential'),
        updated_at: level >= OWNER ? timestampParam(p, 'updated_at') : undefined,
      };

      // Real `UpdateService`: the state change first (its own hook), then the other fields (`update`).
      const stateEvent = given(p, 'state_event');
      if (stateEvent === 'close' || stateEvent === 'reopen')
        setIssueState(ctx, pr, issue, who.user, stateEvent);

      if (Object.values(edits).some((v) => v !== undefined)) {
        if (edits.title !== undefined && edits.title !== issue.title) {
          addSystemNote(
            ctx,
            pr,
            'Issue',
            issue,
            who.user,
            `Title changed from **${issue.title}** to **${edits.title}**`,
          );
          issue.title = edits.title;
        }
        if (edits.description !== undefined) issue.description = edits.description;
        if (edits.assignee_id !== undefined && edits.assignee_id !== issue.assignee_id) {
          const assignee = db.data.users.find((u) => u.id === edits.assignee_id);
          addSystemNote(
            ctx,
            pr,
            'Issue',
            issue,
            who.user,
            assignee ? `Reassigned to @${assignee.username}` : 'Assignee removed',
          );
          issue.assignee_id = edits.assignee_id;
        }
        if (edits.milestone_id !== undefined) issue.milestone_id = edits.milestone_id;
        if (edits.labels !== undefined) issue.labels = ensureLabels(ctx, pr, edits.labels, who.user);
        if (edits.confidential !== undefined) issue.confidential = edits.confidential;
        issue.updated_at = edits.updated_at ?? db.now();
        db.changed();
        ctx.hooks.emit(pr.id, 'Issue Hook', issuePayload(ctx, issue, who.user, 'update'));
      }
      res.json(issueView(ctx, issue, who.user));
    }),
  );

  // docs/api-v3.md#issues: admins and project owners only; 404 when absent; soft delete (then invisible).
  router.delete(
    '/projects/:id/issues/:issue_id',
    projectRoute(db, 'visible', (call) => {
      const { res, who, level } = call;
      const issue = issueOf(call);
      if (level < OWNER) throw forbidden();
      issue.deleted = true;
      db.changed();
      res.json(issueView(ctx, issue, who.user));
    }),
  );

  router.post(
    '/projects/:id/issues/:issue_id/move',
    projectRoute(db, 'visible', (call) => {
      const { res, who, p, project: from } = call;
      const issue = issueOf(call);
      const targetId = requiredInt(p, 'to_project_id');
      const target = db.data.projects.find((p) => p.id === targetId);
      if (!target) throw notFound();
      // Real `Issue#can_move?` comes first: reporter or more on both projects, and not moved already.
      const canAdminIn = (pr: ProjectRec) => canRead(db, pr, who.user) && canAdminIssues(db, pr, who.user);
      if (!canAdminIn(from) || !canAdminIn(target) || issue.moved_to_id !== null)
        throw new HttpError(400, { message: 'Cannot move issue due to insufficient permissions!' });
      if (target.id === from.id)
        throw new HttpError(400, { message: 'Cannot move issue to project it originates from!' });
      res.status(201).json(issueView(ctx, moveIssue(ctx, from, issue, target, who.user), who.user));
    }),
  );

  for (const [method, subscribe] of [
    ['post', true],
    ['delete', false],
  ] as const) {
    router[method](
      '/projects/:id/issues/:issue_id/subscription',
      projectRoute(db, 'visible', (call) => {
        const { res, who } = call;
        const issue = issueOf(call);
        // 304 (empty body) when already subscribed / not subscribed (docs/api-v3.md#states-and-transitions).
        if (!setSubscribed(ctx, 'Issue', issue, who.user, subscribe)) return void res.status(304).end();
        res.status(subscribe ? 201 : 200).json(issueView(ctx, issue, who.user));
      }),
    );
  }
}
