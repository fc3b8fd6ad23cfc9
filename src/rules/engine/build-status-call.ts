/** Posting a commit status on the head commit, shared by the `status` action and summary statuses. */
import { markRepositoryStatus } from '../../api/index.ts';
import type { PlanOutcome } from './define-action.ts';
import { skip, type StatusState } from './planned-call.ts';
import type { MergeRequestSnapshot } from './snapshot.ts';

export interface WantedStatus {
  name: string;
  state: StatusState;
  description?: string;
  target_url?: string;
}

export const shortSha = (sha: string): string => sha.slice(0, 8);

/**
 * `fromRepository`: the rule is a project's own (`.hookbot.yml`). The call says so, and the executor
 * marks the status's description (`REPOSITORY_STATUS_MARK`): the status then satisfies no
 * requirement when `rules.status_authors` is set, as a developer's own would not. The mark is the
 * executor's to add, so no text of the rule can leave it out.
 */
export function planStatus(
  mr: MergeRequestSnapshot,
  wanted: WantedStatus,
  reason: string,
  fromRepository = false,
): PlanOutcome {
  if (mr.sha === null) return skip('the head commit is unknown');
  const current = mr.statuses?.find((status) => status.name === wanted.name);
  if (current?.status === wanted.state) {
    // Posted again only when its description is known to differ: a blocked summary whose reason
    // changed says the new reason. Real servers refuse pending over pending (400); the executor
    // finishes the old status first then (postStatus in executor/item-calls.ts). A repository
    // rule's status stands with the mark (with a trust it is not read at all: the executor's
    // re-read finds it).
    const posted = fromRepository ? markRepositoryStatus(wanted.description) : (wanted.description ?? null);
    const sameText = current.description === undefined || current.description === posted;
    if (sameText) return skip(`${wanted.name} is already ${wanted.state} on ${shortSha(mr.sha)}`);
  }
  return [
    {
      call: {
        op: 'statuses.create',
        args: {
          // The head commit's project: a fork's for a merge request from a fork (statuses are read
          // there too, so what is posted is what the next evaluation sees).
          project: mr.source_project_id ?? mr.project.id,
          sha: mr.sha,
          state: wanted.state,
          name: wanted.name,
          ref: mr.source_branch,
          ...(wanted.description !== undefined ? { description: wanted.description } : {}),
          ...(wanted.target_url !== undefined ? { target_url: wanted.target_url } : {}),
          ...(fromRepository ? { repository: true as const } : {}),
        },
      },
      reason,
    },
  ];
}
