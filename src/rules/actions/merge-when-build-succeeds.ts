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
    "Merges the merge request when its build succeeds, pinned to the head commit: the bot watches it (the merge watch) and merges it itself once every required status has passed on that head, from the accounts it trusts (`rules.status_authors`), after a fresh check that the rule still holds. Only when a `statuses` condition with `state: pending` held in the same rule: the required statuses of the head are all reported, some still pending or running, none failed. On a member's authority, as `merge` ([Members' commands](#members-commands)). With `on_server: true` the server's own merge-when-build-succeeds is armed too: the server then merges as the bot whatever the merge request becomes (8.x disarms it on a push while it is open, and nowhere else: not on a close, a push while closed and a reopen, a retarget, nor on statuses its developers post themselves); the bot cancels it as soon as it sees another head or target, but the author picks the moment of the server's merge. So `on_server` is refused for a fork and on a comment, and belongs where every developer who can reach the merge request is trusted to merge.",
  example: { remove_source_branch: true },
  bareParams: {},
  params: z.strictObject({
    remove_source_branch: z.boolean().optional(),
    authors: authorsSchema,
    on_server: z.boolean().optional().meta({
      description:
        "arm the server's own merge-when-build-succeeds too (default false: the bot watches and merges itself, pinned to this head, on the statuses it trusts). The server then merges as the bot whatever the merge request becomes (a close, a push and a reopen, a retarget, statuses its developers post): only where every developer who can reach it is trusted to merge; never for a fork or on a comment (docs/rules.md#merge_when_build_succeeds)",
    }),
  }),
  itemKinds: ['merge_request'],
  describe: (p) =>
    `merge_when_build_succeeds${p.on_server ? ' (the server armed too)' : ''}${p.remove_source_branch ? ', removing the source branch' : ''}${p.authors === 'anyone' ? ', whoever the author' : ''}`,
  authority: (p) => authorityOf(p.authors),
  plan: (p, input, { guarantees }) => {
    const mr = input.snapshot;
    if (mr.kind !== 'merge_request') return [];
    const blocker = mergeBlocker(mr);
    if (blocker !== undefined || mr.sha === null) return blocked(blocker ?? 'the head commit is unknown');
    if (mr.merge_when_build_succeeds || mr.botMerge === true)
      return skip('merge_when_build_succeeds is already set');
    const authority = p.authors === 'anyone' ? undefined : mergeAuthority(mr);
    if (authority && !authority.ok) return blocked(authority.reason);
    if (p.on_server) {
      // The server's merge judges the build of the head's own project (a fork's: its owner posts its
      // statuses as she likes) and outlives what the bot judged: red team of issue 36.
      if (mr.source_project_id !== undefined && mr.source_project_id !== mr.project.id)
        return blocked(
          "on_server: its source branch is in a fork: the server would merge it when the fork's own build succeeds, whose statuses the fork's owner posts as she likes; the bot's own merge (without on_server) judges the statuses it trusts",
        );
      if (authority?.ok && authority.by === 'comment')
        return blocked(
          "on_server: armed on a comment, the server's merge would outlive the head the comment approved (a close, a push and a reopen); the bot's own merge (without on_server) replays the comment first",
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
            ...(p.on_server ? { on_server: true } : {}),
          },
        },
        reason: `${p.on_server ? 'arm merge_when_build_succeeds' : 'merge when the build succeeds'} at ${shortSha(mr.sha)}: ${required.join(', ')} running`,
      },
    ];
  },
});
