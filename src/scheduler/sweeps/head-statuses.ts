/**
 * What the merge watch and the merge queue both read of a merge request before merging it: the
 * source branch's head, and the latest status per required name on a pinned commit.
 */
import { ApiError, type Client, latestByName, type MergeRequest } from '../../api/index.ts';
import { classifyStatus, type StatusBucket } from '../../rules/index.ts';

export interface HeadClient {
  branches: Pick<Client['branches'], 'get'>;
  statuses: Pick<Client['statuses'], 'list'>;
}

/** The source branch's head: the merge request's `sha` where the server gives it, else the branch; null when the branch is gone. */
export async function sourceHead(client: HeadClient, mr: MergeRequest): Promise<string | null> {
  if (mr.sha) return mr.sha;
  try {
    return (await client.branches.get(mr.source_project_id, mr.source_branch)).commit.id;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** Latest status per required name on `sha`; a required one that is absent is `missing`, never passed. */
export function requiredBuckets(
  client: HeadClient,
  mr: MergeRequest,
  sha: string,
  required: readonly string[],
): Promise<Record<string, StatusBucket>> {
  return bucketsAt(client, mr.source_project_id, sha, required);
}

/**
 * The same on a commit of `projectId`; with `ref`, only the statuses posted for that branch (a train
 * car's, on its own branch: the same commit pushed to another branch, a developer's, and built there
 * says nothing of the car's own build; red team of issue 36).
 */
export async function bucketsAt(
  client: HeadClient,
  projectId: number,
  sha: string,
  required: readonly string[],
  ref?: string,
): Promise<Record<string, StatusBucket>> {
  const all = [];
  for await (const status of client.statuses.list(projectId, sha, ref === undefined ? {} : { ref_name: ref }))
    all.push(status);
  const latest = latestByName(all);
  const buckets: Record<string, StatusBucket> = {};
  for (const name of required) {
    const status = latest.find((s) => s.name === name);
    buckets[name] = classifyStatus(
      status && { name: status.name, status: status.status, allow_failure: status.allow_failure },
    );
  }
  return buckets;
}
