import { describe, expect, it } from 'vitest';
import { mergeRequest, runCondition } from '../support.ts';

describe('downvotes condition', () => {
  it.each([
    { name: 'none wanted, none given', fixture: 'mr-green' as const, spec: 0, ok: true, value: 0 },
    { name: 'none wanted, one given', fixture: 'mr-pending' as const, spec: 0, ok: false, value: 1 },
    { name: 'at_most', fixture: 'mr-pending' as const, spec: { at_most: 1 }, ok: true, value: 1 },
  ])('$name', ({ fixture, spec, ok, value }) => {
    expect(runCondition({ downvotes: spec }, mergeRequest(fixture))).toEqual({ value, ok });
  });
});
