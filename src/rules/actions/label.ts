import { z } from 'zod';
import { defineAction } from '../engine/define-action.ts';
import { labelProposal } from '../engine/build-calls.ts';
import { labelListSchema } from '../engine/param-schemas.ts';
import { skip } from '../engine/planned-call.ts';

export const labelParams = z
  .strictObject({
    add: labelListSchema.optional(),
    remove: labelListSchema.optional(),
    toggle: labelListSchema.optional().meta({
      description: 'added while the rule matches, removed once it applies and no longer matches',
    }),
  })
  .refine((p) => p.add !== undefined || p.remove !== undefined || p.toggle !== undefined, {
    message: 'give at least one of add, remove, toggle',
    when: (payload) => payload.issues.length === 0,
  })
  .superRefine((p, ctx) => {
    const adding = new Set([...(p.add ?? []), ...(p.toggle ?? [])]);
    for (const [index, name] of (p.remove ?? []).entries())
      if (adding.has(name))
        ctx.addIssue({
          code: 'custom',
          path: ['remove', index],
          message: `label "${name}" is both added and removed by this action`,
        });
  });

const unique = (names: readonly string[]): string[] => [...new Set(names)];

/** The names of `wanted` the item has (`has` true) or lacks (`has` false). */
function those(wanted: readonly string[], labels: ReadonlySet<string>, has: boolean): string[] {
  const found: string[] = [];
  for (const name of wanted) if (labels.has(name) === has) found.push(name);
  return found;
}

function describeChange(add: string[], remove: string[]): string {
  const parts: string[] = [];
  if (add.length) parts.push(`add ${add.join(', ')}`);
  if (remove.length) parts.push(`remove ${remove.join(', ')}`);
  return parts.join('; ');
}

export const label = defineAction({
  inRepositories: 'allowed',
  name: 'label',
  summary:
    'Adds and removes labels. `toggle` adds while the rule matches and removes once it no longer does. Present labels are not added again, absent ones not removed; all label changes to one item become one write.',
  example: { add: ['bug', 'needs-triage'], toggle: ['stale'] },
  params: labelParams,
  describe: (p) => {
    const parts: string[] = [];
    if (p.add) parts.push(`add [${p.add.join(', ')}]`);
    if (p.remove) parts.push(`remove [${p.remove.join(', ')}]`);
    if (p.toggle) parts.push(`toggle [${p.toggle.join(', ')}]`);
    return `label: ${parts.join(', ')}`;
  },
  compile: (p) => ({
    add: unique([...(p.add ?? []), ...(p.toggle ?? [])]),
    remove: unique(p.remove ?? []),
    toggle: p.toggle ? unique(p.toggle) : undefined,
  }),
  plan: (c, input) => {
    const add = those(c.add, input.labels, false);
    const remove = those(c.remove, input.labels, true);
    if (add.length === 0 && remove.length === 0) return skip('the labels are already as wanted');
    return [labelProposal(input, add, remove, describeChange(add, remove))];
  },
  planUnmatched: (c, input) => {
    if (!c.toggle) return null;
    const remove = those(c.toggle, input.labels, true);
    if (remove.length === 0) return skip('the toggled labels are already absent');
    return [
      labelProposal(input, [], remove, `the rule no longer matches: remove toggled ${remove.join(', ')}`),
    ];
  },
});
