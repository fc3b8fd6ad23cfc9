import { describe, expect, it } from 'vitest';
import { issue, runCondition } from '../support.ts';

describe('updated condition', () => {
  // Updated 2016-01-04T15:31:46Z; the test clock is 2016-03-20T00:00Z: 75 days later.
  const stale = issue('issue-stale');
  it.each([
    { name: 'older_than 60d', spec: { older_than: '60d' }, ok: true },
    { name: 'older_than 90d', spec: { older_than: '90d' }, ok: false },
    { name: 'newer_than 60d', spec: { newer_than: '60d' }, ok: false },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ updated: spec }, stale)).toEqual({
      value: '2016-01-04T15:31:46.176Z (75d 8h ago)',
      ok,
    });
  });
});
