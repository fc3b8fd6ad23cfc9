import { describe, expect, it } from 'vitest';
import { describeCondition, mergeRequest, runCondition } from '../support.ts';

describe('upvotes condition', () => {
  const mr = mergeRequest('mr-green'); // 2 upvotes
  it.each([
    { name: 'a number is equality', spec: 2, ok: true },
    { name: 'equality fails', spec: 3, ok: false },
    { name: 'at_least', spec: { at_least: 2 }, ok: true },
    { name: 'more_than', spec: { more_than: 2 }, ok: false },
    { name: 'at_most', spec: { at_most: 2 }, ok: true },
    { name: 'less_than', spec: { less_than: 2 }, ok: false },
    { name: 'a range', spec: { more_than: 0, less_than: 5 }, ok: true },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ upvotes: spec }, mr)).toEqual({ value: 2, ok });
  });

  it('describes', () => {
    expect(describeCondition({ upvotes: { at_least: 2, less_than: 9 } })).toBe(
      'upvotes at least 2 and less than 9',
    );
  });
});
