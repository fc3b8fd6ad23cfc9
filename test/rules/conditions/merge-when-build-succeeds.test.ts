import { describe, expect, it } from 'vitest';
import { mergeRequest, runCondition } from '../support.ts';

describe('merge_when_build_succeeds condition', () => {
  it.each([
    { name: 'set, asked true', set: true, spec: true, ok: true },
    { name: 'set, asked false', set: true, spec: false, ok: false },
    { name: 'not set, asked false', set: false, spec: false, ok: true },
  ])('$name', ({ set, spec, ok }) => {
    const mr = mergeRequest('mr-pending', { merge_when_build_succeeds: set });
    expect(runCondition({ merge_when_build_succeeds: spec }, mr)).toEqual({ value: set, ok });
  });
});
