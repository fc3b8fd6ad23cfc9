import { defineCondition } from '../engine/define-condition.ts';
import { ageSchema, compileAge, describeAge } from './age.ts';

export const updated = defineCondition({
  name: 'updated',
  summary:
    'How long ago the item last changed: `older_than` and/or `newer_than` a duration (`60d`, `2h`, `1w`).',
  example: { older_than: '60d' },
  params: ageSchema,
  describe: (age) => describeAge('updated', age),
  compile: (age) =>
    compileAge(
      age,
      (input) => input.updatedAt,
      (input) => input.snapshot.updated_at,
    ),
});
