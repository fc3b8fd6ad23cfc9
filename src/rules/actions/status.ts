import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { templateSchema } from '../engine/param-schemas.ts';
import { compileTemplate } from '../engine/template.ts';
import { planStatus, shortSha } from '../engine/build-status-call.ts';

export const status = defineAction({
  inRepositories: 'allowed',
  name: 'status',
  summary:
    "Posts a commit status on the head commit of the merge request (`description` and `target_url` take placeholders); nothing when the head is unknown or the status already stands. Posted for a rule of a project's own `.hookbot.yml`, its description starts with `[.hookbot.yml]` and, with `rules.status_authors` set, it satisfies no requirement (of a `statuses` condition, a merge, the merge queue or a train): it is the repository's word, not the CI's ([repository-rules.md](repository-rules.md#statuses)).",
  example: { name: 'hookbot/changelog', state: 'failed', description: 'CHANGELOG.md not updated' },
  params: z.strictObject({
    name: z.string().min(1),
    state: z.enum(['pending', 'running', 'success', 'failed', 'canceled']),
    description: templateSchema.optional(),
    target_url: templateSchema.optional(),
  }),
  itemKinds: ['merge_request'],
  describe: (p) =>
    `status ${p.name}: ${p.state}${p.description ? ` (${JSON.stringify(p.description)})` : ''}`,
  compile: (p) => ({
    name: p.name,
    state: p.state,
    description: p.description === undefined ? undefined : compileTemplate(p.description),
    targetUrl: p.target_url === undefined ? undefined : compileTemplate(p.target_url),
  }),
  plan: (c, input, { fromRepository }) => {
    const mr = input.snapshot;
    if (mr.kind !== 'merge_request') return [];
    return planStatus(
      mr,
      {
        name: c.name,
        state: c.state,
        ...(c.description ? { description: c.description(input) } : {}),
        ...(c.targetUrl ? { target_url: c.targetUrl(input) } : {}),
      },
      `status ${c.name}: ${c.state}${mr.sha ? ` on ${shortSha(mr.sha)}` : ''}`,
      fromRepository === true,
    );
  },
});
