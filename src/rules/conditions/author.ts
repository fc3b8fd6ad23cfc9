import { defineCondition } from '../engine/define-condition.ts';
import { compileUser, describeUser, showUser, userMatcherSchema } from '../matchers/user-matcher.ts';

export const author = defineCondition({
  name: 'author',
  summary: 'Who opened the item, by username: `alice` or `{ in: [alice, bob] }`.',
  example: { in: ['alice', 'bob'] },
  params: userMatcherSchema,
  describe: (matcher) => describeUser('author', matcher),
  compile: (matcher) => {
    const test = compileUser(matcher);
    return ({ snapshot }) => ({ value: showUser(snapshot.author), ok: test(snapshot.author) });
  },
});
