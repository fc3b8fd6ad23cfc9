import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runCondition } from '../support.ts';

describe('work_in_progress condition', () => {
  it.each([
    {
      name: 'false on a ready merge request',
      fixture: 'mr-green' as const,
      spec: false,
      ok: true,
      value: false,
    },
    {
      name: 'true on a ready merge request',
      fixture: 'mr-green' as const,
      spec: true,
      ok: false,
      value: false,
    },
    { name: 'true on a WIP merge request', fixture: 'mr-unread' as const, spec: true, ok: true, value: true },
  ])('$name', ({ fixture, spec, ok, value }) => {
    expect(runCondition({ work_in_progress: spec }, mergeRequest(fixture))).toEqual({ value, ok });
  });

  it('is unknown on an issue', () => {
    expect(runCondition({ work_in_progress: false }, issue('issue-open')).unknown).toBe(true);
  });
});
