import { z } from 'zod';
import { defineCondition } from '../engine/define-condition.ts';

const names = z.array(z.string().min(1)).min(1);

export const labels = defineCondition({
  name: 'labels',
  summary:
    'The labels: `any` (at least one of these), `all` (every one of these), `none` (none of these); given together, all must hold.',
  example: { any: ['bug', 'regression'], none: ['wontfix'] },
  params: z
    .strictObject({ any: names.optional(), all: names.optional(), none: names.optional() })
    .refine((p) => p.any !== undefined || p.all !== undefined || p.none !== undefined, {
      message: 'give at least one of any, all, none',
      when: (payload) => payload.issues.length === 0,
    }),
  describe: (p) => {
    const parts: string[] = [];
    if (p.any) parts.push(`any of [${p.any.join(', ')}]`);
    if (p.all) parts.push(`all of [${p.all.join(', ')}]`);
    if (p.none) parts.push(`none of [${p.none.join(', ')}]`);
    return `labels include ${parts.join(' and ')}`;
  },
  compile: ({ any, all, none }) => {
    return ({ labels: present, labelList }) => ({
      value: labelList,
      ok:
        (any === undefined || any.some((l) => present.has(l))) &&
        (all === undefined || all.every((l) => present.has(l))) &&
        (none === undefined || !none.some((l) => present.has(l))),
    });
  },
});
