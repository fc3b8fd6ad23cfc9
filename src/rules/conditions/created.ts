import { defineCondition } from '../engine/define-condition.ts';
import { ageSchema, compileAge, describeAge } from './age.ts';

export const created = defineCondition({
  name: 'created',
  summary:
    'How long ago the item was opened: `older_than` and/or `newer_than` a duration (`60d`, `2h`, `1w`).',
  example: { newer_than: '2h' },
  params: ageSchema,
  describe: (age) => describeAge('created', age),
  compile: (age) =>
    compileAge(
      age,
      (input) => input.createdAt,
      (input) => input.snapshot.created_at,
    ),
});
