import { defineCondition } from '../engine/define-condition.ts';
import { allOf, evaluateChildren } from './combine.ts';

export const all = defineCondition({
  name: 'all',
  summary:
    'Every nested condition holds (the list under `if` already means this; use it inside `any` or `not`).',
  example: [{ labels: { any: ['bug'] } }, { state: 'opened' }],
  params: ({ conditions }) => conditions,
  describe: (conditions, tools) => `all of (${conditions.map(tools.describeCondition).join('; ')})`,
  compile: (conditions, tools) => {
    const children = conditions.map(tools.compileCondition);
    return {
      evaluate: (input) => allOf(evaluateChildren(children, input)),
      // When all hold, whatever each child proves holds too.
      guarantees: children.flatMap((child) => child.guarantees),
    };
  },
});
