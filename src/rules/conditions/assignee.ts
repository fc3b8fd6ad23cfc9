import { defineCondition } from '../engine/define-condition.ts';
import { compileUser, describeUser, nullableUserMatcherSchema, showUser } from '../matchers/user-matcher.ts';

export const assignee = defineCondition({
  name: 'assignee',
  summary: 'The assignee, by username: `alice`, `{ in: [alice, bob] }`, or `null` for unassigned.',
  example: null,
  params: nullableUserMatcherSchema,
  describe: (matcher) => describeUser('assignee', matcher),
  compile: (matcher) => {
    const test = compileUser(matcher);
    return ({ snapshot }) => ({ value: showUser(snapshot.assignee), ok: test(snapshot.assignee) });
  },
});
