/**
 * Which open merge requests a push or a status change concerns. v3 cannot filter merge requests by
 * branch or sha, so this lists the project's open ones (one page of 100 covers most projects) and
 * filters here.
 */
import type { ItemRef } from '../events/index.ts';
import type { HintResolver } from './pipeline.ts';
import type { Client } from '../api/index.ts';

export function createHintResolver(client: Pick<Client, 'mergeRequests' | 'projects'>): HintResolver {
  async function openMergeRequests(projectId: number) {
    const found = [];
    for await (const mr of client.mergeRequests.list(projectId, { state: 'opened' })) found.push(mr);
    return found;
  }

  async function projectId(project: number | string): Promise<number> {
    return typeof project === 'number' ? project : (await client.projects.get(project)).id;
  }

  const forBranch = async (id: number, branch: string): Promise<ItemRef[]> =>
    (await openMergeRequests(id))
      // Only MRs whose source is this project's branch: a push to a fork names the fork's project.
      .filter((mr) => mr.source_branch === branch && mr.source_project_id === id)
      .map((mr) => ({ type: 'merge_request', projectId: mr.project_id, id: mr.id }));

  return {
    mergeRequestsForBranch: forBranch,
    async mergeRequestsForCommit(project, sha, ref) {
      const id = await projectId(project);
      // Build and pipeline hooks name the branch: its open MRs are the ones whose head this may be.
      // The snapshot then reads the statuses of each MR's current head, so a stale sha does no harm.
      if (ref) return forBranch(id, ref.replace(/^refs\/heads\//, ''));
      // A commit note names no branch: match MRs whose head the server reports (later 8.x).
      return (await openMergeRequests(id))
        .filter((mr) => mr.sha === sha)
        .map((mr) => ({ type: 'merge_request', projectId: mr.project_id, id: mr.id }));
    },
  };
}
