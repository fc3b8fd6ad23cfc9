/**
 * Issue 39: a parameter written as a union of forms reports the problems of the form the writer
 * meant (the one that knows most of the keys written, then the one with fewest problems), and never
 * suggests a key in place of itself.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { explainIssues } from '../../../src/rules/grammar/validation-messages.ts';

const twoForms = z.strictObject({
  if: z.array(
    z.union([
      z.string(),
      z.strictObject({ title: z.string(), labels: z.array(z.string()).optional() }),
      z.strictObject({ in: z.array(z.string()).min(1), title: z.string().optional() }),
    ]),
  ),
});

const messages = (input: unknown) => {
  const result = twoForms.safeParse(input);
  if (result.success) throw new Error('expected problems');
  return explainIssues(result.error.issues, input).map(({ path, key, message }) => ({ path, key, message }));
};

describe('union parameters: the form the writer meant', () => {
  it('a key no form knows is reported on the form that knows the others, not as the other keys being unknown', () => {
    expect(messages({ if: [{ title: 'x', extra: 1 }] })).toEqual([
      { path: ['if', 0], key: 'extra', message: 'unknown key "extra"' },
    ]);
  });

  it('a wrong value is reported on the form whose key it is', () => {
    expect(messages({ if: [{ title: 5 }] })).toEqual([
      { path: ['if', 0, 'title'], key: undefined, message: '"title" must be a text, got number 5' },
    ]);
    expect(messages({ if: [{ in: 5 }] })).toEqual([
      { path: ['if', 0, 'in'], key: undefined, message: '"in" must be a list, got number 5' },
    ]);
  });

  it('no "did you mean" names the key itself (a key another form knows)', () => {
    const input = { rules: [{ if: [{ actor: { in: ['alice'], by_bot: true } }] }] };
    const [message] = explainIssues(
      [{ code: 'unrecognized_keys', keys: ['in'], path: ['rules', 0, 'if', 0, 'actor'], message: '', input }],
      input,
    );
    expect(message!.message).toBe('unknown key "in"');
    expect(message!.hint ?? '').not.toContain('"in"');
  });
});
