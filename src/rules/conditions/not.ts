import { z } from 'zod';
import { defineCondition } from '../engine/define-condition.ts';
import { allOf, evaluateChildren } from './combine.ts';

export const not = defineCondition({
  name: 'not',
  summary:
    'The nested condition does not hold (a list: not all of them hold). Unknown stays unknown, so missing data never makes `not` match.',
  example: { labels: { any: ['wip'] } },
  params: ({ condition, conditions }) => z.union([conditions, condition]),
  describe: (params, tools) =>
    Array.isArray(params)
      ? `not all of (${params.map(tools.describeCondition).join('; ')})`
      : `not (${tools.describeCondition(params)})`,
  compile: (params, tools) => {
    const children = (Array.isArray(params) ? params : [params]).map(tools.compileCondition);
    return (input) => {
      const inner = allOf(evaluateChildren(children, input));
      const unknown = inner.unknown === true;
      // allOf's verdict is fresh and ours alone: flipped in place rather than copied.
      inner.ok = !inner.ok && !unknown;
      return inner;
    };
  },
});
