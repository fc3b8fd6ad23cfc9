import { describe, expect, it } from 'vitest';
import { mergeRequest, runCondition } from '../support.ts';

describe('merge_status condition', () => {
  it.each([
    { name: 'can_be_merged', fixture: 'mr-green' as const, spec: 'can_be_merged', ok: true },
    { name: 'conflicts', fixture: 'mr-unread' as const, spec: 'can_be_merged', ok: false },
    { name: 'in', fixture: 'mr-no-status' as const, spec: { in: ['can_be_merged', 'unchecked'] }, ok: true },
  ])('$name', ({ fixture, spec, ok }) => {
    const mr = mergeRequest(fixture);
    expect(runCondition({ merge_status: spec }, mr)).toEqual({ value: mr.merge_status, ok });
  });
});
