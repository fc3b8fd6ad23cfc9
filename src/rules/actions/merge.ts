import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { templateSchema } from '../engine/param-schemas.ts';
import { blocked, mergeRequestTarget } from '../engine/planned-call.ts';
import { compileTemplate } from '../engine/template.ts';
import {
  authorityOf,
  authorsSchema,
  bucketsOf,
  mergeAuthority,
  mergeBlocker,
  requiredStatuses,
} from './merge-safety.ts';
import { shortSha } from '../engine/build-status-call.ts';

export const merge = defineAction({
  inRepositories: 'operator',
  name: 'merge',
  summary:
    "Merges the merge request, pinned to the head commit that was evaluated (the server refuses if the head moved). Planned only when it is open, not work in progress, without conflicts, a `statuses` condition with `state: success` held in the same rule, and on a member's authority: its author has developer access to the project, or the event is a comment of a member with developer access and no push came after it ([Members' commands](#members-commands); `authors: anyone` waives it).",
  example: { remove_source_branch: true, message: 'Merge !{{ iid }}: {{ title }}' },
  bareParams: {},
  params: z.strictObject({
    remove_source_branch: z.boolean().optional(),
    message: templateSchema
      .optional()
      .meta({ description: 'the merge commit message (placeholders allowed)' }),
    authors: authorsSchema,
  }),
  itemKinds: ['merge_request'],
  describe: (p) =>
    `merge${p.remove_source_branch ? ', removing the source branch' : ''}${p.message ? `, with message ${JSON.stringify(p.message)}` : ''}${p.authors === 'anyone' ? ', whoever the author' : ''}`,
  compile: (p) => ({
    removeSourceBranch: p.remove_source_branch,
    message: p.message === undefined ? undefined : compileTemplate(p.message),
    authors: p.authors,
  }),
  authority: (c) => authorityOf(c.authors),
  plan: (c, input, { guarantees }) => {
    const mr = input.snapshot;
    if (mr.kind !== 'merge_request') return [];
    const blocker = mergeBlocker(mr);
    if (blocker !== undefined || mr.sha === null) return blocked(blocker ?? 'the head commit is unknown');
    if (c.authors !== 'anyone') {
      const authority = mergeAuthority(mr);
      if (!authority.ok) return blocked(authority.reason);
    }
    const required = requiredStatuses(guarantees, 'success');
    if (!required)
      return blocked(
        'no `statuses: { state: success }` condition held in this rule: a merge is never planned without green required statuses',
      );
    // The condition held on this very snapshot; checking again keeps the merge safe even if a
    // condition were wrongly written.
    for (const [name, bucket] of bucketsOf(mr, required))
      if (bucket !== 'passed') return blocked(`required status ${name} is ${bucket}`);
    return [
      {
        call: {
          op: 'mergeRequests.merge',
          args: {
            ...mergeRequestTarget(mr),
            sha: mr.sha,
            ...(c.removeSourceBranch !== undefined
              ? { should_remove_source_branch: c.removeSourceBranch }
              : {}),
            ...(c.message ? { merge_commit_message: c.message(input) } : {}),
          },
        },
        reason: `merge at ${shortSha(mr.sha)}: ${required.join(', ')} passed`,
      },
    ];
  },
});
