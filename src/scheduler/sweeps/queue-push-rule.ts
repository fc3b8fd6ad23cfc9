/**
 * Where the merge queue may push (docs/merge-queue.md, "Where the queue pushes"): the bot pushes with
 * its own credentials (a master of the project, often), so it pushes only where the merge request's
 * author could push themselves, and only to that merge request's own source branch:
 *
 * - the source branch is in the target project (a fork's branch is never pushed: the caller tests a
 *   fork's merge request only when it already holds the target);
 * - it is not the project's default branch;
 * - it is not protected (whoever may push to it: the queue is not the place to decide a protected
 *   branch's content, and `developers_can_push` is not read);
 * - the author is active and has developer access or more to the project, as 8.x decides
 *   `push_code` on an unprotected branch: the project's own member, the owner of its user namespace,
 *   or a member of its group. Access through a group the project is shared with is not seen (the
 *   bot cannot list it), nor an administrator's rights: such an author is refused, with the reason.
 *
 * Everything is read from the server at the time of asking, never from a payload or the queue's
 * memory: the merge queue asks before it starts an update and again right before the push.
 */
import { accessLevel, ApiError, type Client, type MergeRequest } from '../../api/index.ts';

export interface PushRuleClient {
  projects: Pick<Client['projects'], 'get'>;
  branches: Pick<Client['branches'], 'get'>;
  members: Pick<Client['members'], 'get' | 'getInGroup'>;
}

/** Developer: the least access that may push to an unprotected branch (8.x `push_code`). */
const DEVELOPER = 30;

const notFound = (error: unknown): boolean => error instanceof ApiError && error.status === 404;

/**
 * Why the queue must not push to this merge request's source branch, or undefined when it may. A
 * source branch that is gone is the updater's to report (`missing`): undefined here.
 */
export async function pushRefusal(client: PushRuleClient, mr: MergeRequest): Promise<string | undefined> {
  const source = `\`${mr.source_branch}\``;
  if (mr.source_project_id !== mr.project_id)
    return `its source branch ${source} is in another project (a fork): the queue never pushes there`;
  const project = await client.projects.get(mr.project_id);
  if (project.default_branch !== null && mr.source_branch === project.default_branch)
    return `its source branch ${source} is the project's default branch: the queue never pushes to it`;
  let protectedBranch: boolean;
  try {
    protectedBranch = (await client.branches.get(mr.project_id, mr.source_branch)).protected;
  } catch (error) {
    if (notFound(error)) return undefined;
    throw error;
  }
  if (protectedBranch)
    return `its source branch ${source} is protected: the queue pushes only to branches the merge request's author could push to, never to a protected one`;
  if (mr.author.state !== 'active')
    return `its author ${mr.author.username} is ${mr.author.state}: the queue pushes only where the author could push`;
  // The author's access as far as the API shows it (api/access.ts, shared with the rules' gate).
  const level = await accessLevel(client, project, mr.author, { enough: DEVELOPER });
  if (level < DEVELOPER)
    return `its author ${mr.author.username} cannot push to ${source} (the bot sees no developer access to the project for them: a member of the project or of its group), and the queue pushes only where the author could push`;
  return undefined;
}
