/**
 * The JSON `hookbot explain` prints for an item with one decision kept (the tests' bots record one
 * and its echoes are skipped: no rule allows bot events): the decision's fields at the top, its id,
 * each call it made as an action of that decision, itself as the one decision that acted, and a
 * history of one. Written out here, field by field, rather than computed by the code under test.
 */
import type { DecisionRecord } from '../../src/state/index.ts';

interface Call {
  id: string;
  op: string;
  rule: string;
  action: string;
  call: string;
  status: string;
  detail: string;
}
interface Recorded {
  at: string;
  text: string;
  evaluation: { event: string; rules: { rule: string; matched: boolean }[] };
  execution: { calls: Call[] };
}

export function answerOfOne(record: DecisionRecord): Record<string, unknown> {
  const decision = record.decision as Recorded;
  return {
    ...decision,
    id: record.id,
    actions: decision.execution.calls.map((call) => ({
      id: call.id,
      rule: call.rule,
      action: call.action,
      op: call.op,
      call: call.call,
      status: call.status,
      detail: call.detail,
      at: new Date(record.at).toISOString(),
      decision: record.id,
    })),
    acting: [{ id: record.id, ...decision }],
    history: [
      {
        id: record.id,
        at: new Date(record.at).toISOString(),
        event: decision.evaluation.event,
        acted: true,
        outcome: `${decision.execution.calls.length} done`,
        matched: decision.evaluation.rules.filter((rule) => rule.matched).map((rule) => rule.rule),
      },
    ],
    explanation: decision.text,
  };
}
