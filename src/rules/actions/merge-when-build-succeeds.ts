import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { blocked, mergeRequestTarget, skip } from '../engine/planned-call.ts';
import {
  authorityOf,
  authorsSchema,
  bucketsOf,
  mergeAuthority,
  mergeBlocker,
  requiredStatuses,
} from './merge-safety.ts';
import { shortSha } from '../engine/build-status-call.ts';

export const mergeWhenBuildSucceeds = defineAction({
  inRepositories: 'operator',
  name: 'merge_when_build_succeeds',
  summary:
    "Sets merge-when-build-succeeds, pinned to the head commit. Only when a `statuses` condition with `state: pending` held in the same rule: the required statuses of the head are all reported, some still pending or running, none failed. Never on a head commit that has no status yet (the server would merge it at once). On a member's authority, as `merge` ([Members' commands](#members-commands)), and never for a merge request from a fork (the server would judge the fork's own build, whose statuses its owner posts). The bot cancels the server's merge as soon as it sees the merge request at another head or target than it armed for (a close, a push and a reopen; a new target branch), which the server does not.",
  example: { remove_source_branch: true },
  bareParams: {},
  params: z.strictObject({ remove_source_branch: z.boolean().optional(), authors: authorsSchema }),
  itemKinds: ['merge_request'],
  describe: (p) =>
    `merge_when_build_succeeds${p.remove_source_branch ? ', removing the source branch' : ''}${p.authors === 'anyone' ? ', whoever the author' : ''}`,
  authority: (p) => authorityOf(p.authors),
  plan: (p, input, { guarantees }) => {
    const mr = input.snapshot;
    if (mr.kind !== 'merge_request') return [];
    const blocker = mergeBlocker(mr);
    if (blocker !== undefined || mr.sha === null) return blocked(blocker ?? 'the head commit is unknown');
    if (mr.merge_when_build_succeeds) return skip('merge_when_build_succeeds is already set');
    if (p.authors !== 'anyone') {
      const authority = mergeAuthority(mr);
      if (!authority.ok) return blocked(authority.reason);
      // The server judges the build of the head's own project: a fork's, whose statuses its owner
      // posts as she likes, so the merge would be hers to trigger (red team of issue 36).
      if (mr.source_project_id !== undefined && mr.source_project_id !== mr.project.id)
        return blocked(
          "its source branch is in a fork: the server would merge it when the fork's own build succeeds, and the fork's owner posts its statuses as she likes; use merge or queue for a fork's merge request (docs/rules.md#members-commands)",
        );
    }
    if (!mr.statuses || mr.statuses.length === 0)
      return blocked('the head commit has no status yet: merge_when_build_succeeds is never armed on it');
    const required = requiredStatuses(guarantees, 'pending');
    if (!required)
      return blocked(
        'no `statuses: { state: pending }` condition held in this rule: nothing says a build is running',
      );
    const buckets = bucketsOf(mr, required);
    for (const [name, bucket] of buckets)
      if (bucket === 'missing' || bucket === 'failed') return blocked(`required status ${name} is ${bucket}`);
    if (![...buckets.values()].includes('running'))
      return blocked('no required status is pending or running');
    return [
      {
        call: {
          op: 'mergeRequests.mergeWhenBuildSucceeds',
          args: {
            ...mergeRequestTarget(mr),
            sha: mr.sha,
            ...(p.remove_source_branch !== undefined
              ? { should_remove_source_branch: p.remove_source_branch }
              : {}),
          },
        },
        reason: `arm merge_when_build_succeeds at ${shortSha(mr.sha)}: ${required.join(', ')} running`,
      },
    ];
  },
});
