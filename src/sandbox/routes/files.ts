/**
 * Repository files, the real 8.x calls (docs/api-v3.md#repository-files lists "Repository Files" as not shown): read one
 * file, and create, update or delete one file as one commit on a branch, which is how tests and the demo
 * put commits into the sandbox's repositories.
 */
import type { Router } from 'express';
import path from 'node:path';
import type { GitCommit, SandboxContext } from '../context.ts';
import { notify } from '../context.ts';
import { GitError, NULL_SHA, readsFiles } from '../git.ts';
import { badRequest, notFound, requiredStr, str } from '../http.ts';
import { canPushTo, requireCodeAccess, requirePush } from './branches.ts';
import { projectRoute, type ProjectRouteCall } from '../route.ts';

/** The 8.x Files services' messages for what the repository refused. */
function refusal(error: unknown): unknown {
  if (!(error instanceof GitError)) return error;
  switch (error.kind) {
    case 'missing-branch':
      return badRequest('You can only create or edit files when you are on a branch');
    case 'file-exists':
      return badRequest(
        'Your changes could not be committed because a file with the same name already exists',
      );
    case 'file-missing':
      // 8.x quietly created the file; later servers refuse with this message, which is the useful one.
      return badRequest("A file with this name doesn't exist");
    case 'invalid-path':
      return badRequest(`Your changes could not be committed: ${error.message}`);
    case 'invalid-branch-name':
      return badRequest('Branch name is invalid');
    default:
      return error;
  }
}

export function registerFileRoutes(router: Router, ctx: SandboxContext): void {
  const { db } = ctx;
  const FILES = '/projects/:id/repository/files';

  router.get(
    FILES,
    projectRoute(db, requireCodeAccess, async ({ res, p, project }) => {
      const filePath = requiredStr(p, 'file_path');
      const ref = requiredStr(p, 'ref');
      const commit = await ctx.git.commit(project.id, ref);
      if (!commit) throw notFound('Commit');
      const file = readsFiles(ctx.git) ? await ctx.git.readFile(project.id, commit.id, filePath) : undefined;
      if (!file) throw notFound('File');
      res.json({
        file_name: path.posix.basename(file.path),
        file_path: file.path,
        size: file.size,
        encoding: 'base64',
        content: file.content.toString('base64'),
        ref,
        blob_id: file.blob_id,
        commit_id: file.commit_id,
        last_commit_id: file.last_commit_id,
      });
    }),
  );

  async function commitFile(
    { res, who, p, project }: ProjectRouteCall,
    mode: 'create' | 'update' | 'delete',
  ) {
    // 8.x `required_attributes!`, in its order; blank counts as missing, so an empty file cannot be
    // sent. A deletion takes no content.
    const filePath = requiredStr(p, 'file_path');
    const branch = requiredStr(p, 'branch_name');
    const content = mode === 'delete' ? '' : requiredStr(p, 'content');
    const message = requiredStr(p, 'commit_message');
    if (!canPushTo(db, project, who, branch))
      throw badRequest('You are not allowed to push into this branch');
    const bytes = str(p, 'encoding') === 'base64' ? Buffer.from(content, 'base64') : content;
    // 8.x takes author_email/author_name as the commit's author (the caller otherwise).
    const author = {
      name: str(p, 'author_name') || who.user.name,
      email: str(p, 'author_email') || who.user.email,
    };
    let commit: GitCommit;
    try {
      commit = await ctx.git.commitFile(project.id, {
        branch,
        path: filePath,
        content: bytes,
        message,
        author,
        mode,
      });
    } catch (error) {
      throw refusal(error);
    }
    await notify(ctx.on.push, {
      project,
      ref: `refs/heads/${branch}`,
      before: commit.parent_ids[0] ?? NULL_SHA,
      after: commit.id,
      user: who.user,
    });
    res.status(mode === 'create' ? 201 : 200).json({ file_path: filePath, branch_name: branch });
  }

  router.post(
    FILES,
    projectRoute(db, requirePush, (call) => commitFile(call, 'create')),
  );
  router.put(
    FILES,
    projectRoute(db, requirePush, (call) => commitFile(call, 'update')),
  );
  router.delete(
    FILES,
    projectRoute(db, requirePush, (call) => commitFile(call, 'delete')),
  );
}
