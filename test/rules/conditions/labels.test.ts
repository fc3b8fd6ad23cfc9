import { describe, expect, it } from 'vitest';
import { describeCondition, issue, runCondition } from '../support.ts';

describe('labels condition', () => {
  const item = issue('issue-open', { labels: ['bug', 'ui'] });
  it.each([
    { name: 'any: one present', spec: { any: ['bug', 'regression'] }, ok: true },
    { name: 'any: none present', spec: { any: ['question'] }, ok: false },
    { name: 'all: every one present', spec: { all: ['bug', 'ui'] }, ok: true },
    { name: 'all: one missing', spec: { all: ['bug', 'backend'] }, ok: false },
    { name: 'none: none present', spec: { none: ['wontfix'] }, ok: true },
    { name: 'none: one present', spec: { none: ['wontfix', 'ui'] }, ok: false },
    { name: 'together: all must hold', spec: { any: ['bug'], none: ['ui'] }, ok: false },
    { name: 'labels are case-sensitive', spec: { any: ['Bug'] }, ok: false },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ labels: spec }, item)).toEqual({ value: ['bug', 'ui'], ok });
  });

  it('describes', () => {
    expect(describeCondition({ labels: { any: ['a'], none: ['b', 'c'] } })).toBe(
      'labels include any of [a] and none of [b, c]',
    );
  });
});
