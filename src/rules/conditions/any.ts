import { defineCondition } from '../engine/define-condition.ts';
import { anyOf, evaluateChildren } from './combine.ts';

export const any = defineCondition({
  name: 'any',
  summary: 'At least one nested condition holds.',
  example: [{ labels: { any: ['automerge'] } }, { author: 'release-bot' }],
  params: ({ conditions }) => conditions,
  describe: (conditions, tools) => `any of (${conditions.map(tools.describeCondition).join('; ')})`,
  compile: (conditions, tools) => {
    const children = conditions.map(tools.compileCondition);
    return (input) => anyOf(evaluateChildren(children, input));
  },
});
