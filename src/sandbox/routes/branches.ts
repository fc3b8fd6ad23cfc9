/**
 * Branches (docs/api-v3.md#branches): list, read, protect, unprotect; plus the real 8.x create and
 * delete (docs/api-v3.md#branches leaves "Repositories (other than branches and commits)" not shown, and the
 * bot's tests and the demo need to make branches). Branch names may hold slashes, sent encoded
 * (`feature%2Fx`) or not: real 8.x servers route `:branch` with `requirements: { branch: /.+/ }`.
 */
import type { Request, Router } from 'express';
import type { Caller, GitCommit, SandboxContext } from '../context.ts';
import { notify } from '../context.ts';
import type { Db, ProjectRec } from '../db.ts';
import { GitError, NULL_SHA } from '../git.ts';
import { badRequest, flag, forbidden, HttpError, notFound, requiredStr, sendPage } from '../http.ts';
import { DEVELOPER, MASTER, REPORTER, requireLevel } from '../permissions.ts';
import {
  canPushCode,
  canPushToBranch,
  isProtectedBranch,
  protectBranch,
  protectedBranch,
  unprotectBranch,
} from '../protected-branches.ts';
import { projectRoute } from '../route.ts';

/**
 * 8.x `download_code`: everyone who sees a public or internal project, reporters and up on a private
 * one (guests of a private project see its issues but not its code): 403 otherwise.
 */
export function requireCodeAccess(db: Db, project: ProjectRec, who: Caller): void {
  if (project.visibility_level === 0) requireLevel(db, project, who, REPORTER);
}

/** 8.x `push_code`: developers and up, and never into an archived project. */
export function requirePush(db: Db, project: ProjectRec, who: Caller): void {
  requireLevel(db, project, who, DEVELOPER);
  if (!canPushCode(db, project, who.user)) throw forbidden(); // 8.x drops push_code from archived projects
}

/** Whether the caller may push to `branch` (8.x `UserAccess#can_push_to_branch?`, protected-branches.ts). */
export function canPushTo(db: Db, project: ProjectRec, who: Caller, branch: string): boolean {
  return canPushToBranch(db, project, who.user, branch);
}

/** docs/api-v3.md#branch: the commit in the form the real servers' git library serialised it. */
export function branchView(db: Db, project: ProjectRec, name: string, commit: GitCommit) {
  const rec = protectedBranch(db, project.id, name);
  return {
    name,
    protected: rec !== undefined,
    commit: {
      id: commit.id,
      parents: commit.parent_ids.map((id) => ({ id })),
      tree: commit.tree,
      message: commit.message,
      author: { name: commit.author_name, email: commit.author_email },
      committer: { name: commit.committer_name, email: commit.committer_email },
      authored_date: commit.authored_date,
      committed_date: commit.committed_date,
    },
    // Later 8.x servers: whether developers may push or merge (false on an unprotected branch).
    developers_can_push: rec?.developers_can_push ?? false,
    developers_can_merge: rec?.developers_can_merge ?? false,
  };
}

/** `*branch` arrives as its path segments. */
function branchParam(req: Request): string {
  const value = (req.params as Record<string, unknown>).branch;
  return Array.isArray(value) ? value.map(String).join('/') : String(value ?? '');
}

export function registerBranchRoutes(router: Router, ctx: SandboxContext): void {
  const { db } = ctx;
  const BRANCHES = '/projects/:id/repository/branches';

  router.get(
    BRANCHES,
    projectRoute(db, requireCodeAccess, async ({ req, res, project }) => {
      const branches = await ctx.git.branches(project.id);
      // docs/api-v3.md#pagination: every GET list is paginated. Real 8.x servers answer all branches at once,
      // sorted by name; with the default page size the two agree up to 20 branches.
      sendPage(
        req,
        res,
        branches.map((b) => branchView(db, project, b.name, b.commit)),
      );
    }),
  );

  router.get(
    `${BRANCHES}/*branch`,
    projectRoute(db, requireCodeAccess, async ({ req, res, project }) => {
      const name = branchParam(req);
      const commit = await ctx.git.branch(project.id, name);
      if (!commit) throw notFound('Branch');
      res.json(branchView(db, project, name, commit));
    }),
  );

  for (const action of ['protect', 'unprotect'] as const) {
    router.put(
      `${BRANCHES}/*branch/${action}`,
      projectRoute(db, MASTER, async ({ req, res, p, project }) => {
        // 8.x `authorize_admin_project`: masters and up. The answer (not shown in docs/api-v3.md#branches) is the
        // branch, as on real servers; protecting twice or unprotecting an unprotected branch is harmless.
        const name = branchParam(req);
        const commit = await ctx.git.branch(project.id, name);
        if (!commit) throw notFound('Branch');
        if (action === 'protect')
          protectBranch(db, project.id, name, {
            developers_can_push: flag(p, 'developers_can_push'),
            developers_can_merge: flag(p, 'developers_can_merge'),
          });
        else unprotectBranch(db, project.id, name);
        db.changed();
        res.json(branchView(db, project, name, commit));
      }),
    );
  }

  router.post(
    BRANCHES,
    projectRoute(db, requirePush, async ({ res, who, p, project }) => {
      const name = requiredStr(p, 'branch_name');
      const ref = requiredStr(p, 'ref');
      let commit: GitCommit | undefined;
      try {
        commit = await ctx.git.createBranch(project.id, name, ref);
      } catch (error) {
        // The messages of 8.x CreateBranchService.
        if (error instanceof GitError && error.kind === 'invalid-branch-name')
          throw badRequest('Branch name is invalid');
        if (error instanceof GitError && error.kind === 'branch-exists')
          throw badRequest('Branch already exists');
        throw error;
      }
      if (!commit) throw badRequest('Invalid reference name');
      const view = branchView(db, project, name, commit);
      // A new branch is a push (real servers fire the Push Hook with an all-zeros `before`).
      await notify(ctx.on.push, {
        project,
        ref: `refs/heads/${name}`,
        before: NULL_SHA,
        after: commit.id,
        user: who.user,
      });
      res.status(201).json(view);
    }),
  );

  router.delete(
    `${BRANCHES}/*branch`,
    projectRoute(db, requirePush, async ({ req, res, who, project }) => {
      const name = branchParam(req);
      const commit = await ctx.git.branch(project.id, name);
      // The answers of 8.x DeleteBranchService (`render_api_error!(message, code)`).
      if (!commit) throw new HttpError(404, { message: 'No such branch' });
      if (name === project.default_branch) throw new HttpError(405, { message: 'Cannot remove HEAD branch' });
      if (isProtectedBranch(db, project.id, name))
        throw new HttpError(405, { message: 'Protected branch cant be removed' });
      try {
        await ctx.git.deleteBranch(project.id, name);
      } catch (error) {
        if (error instanceof GitError && error.kind === 'missing-branch')
          throw new HttpError(404, { message: 'No such branch' });
        throw error;
      }
      // Deleting a branch is a push too: real servers fire the Push Hook with an all-zeros `after`.
      await notify(ctx.on.push, {
        project,
        ref: `refs/heads/${name}`,
        before: commit.id,
        after: NULL_SHA,
        user: who.user,
      });
      res.json({ branch_name: name });
    }),
  );
}
