import { describe, expect, it } from 'vitest';
import { describeCondition, issue, runCondition } from '../support.ts';

describe('author condition', () => {
  it.each([
    { name: 'username equality', spec: 'alice', ok: true },
    { name: 'usernames ignore case', spec: 'Alice', ok: true },
    { name: 'another user', spec: 'bob', ok: false },
    { name: 'in: one of several', spec: { in: ['bob', 'alice'] }, ok: true },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ author: spec }, issue('issue-open'))).toEqual({ value: '@alice', ok });
  });

  it('describes', () => {
    expect(describeCondition({ author: { in: ['a', 'b'] } })).toBe('author is one of [@a, @b]');
  });
});
