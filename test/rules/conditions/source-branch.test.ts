import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runCondition } from '../support.ts';

describe('source_branch condition', () => {
  const mr = mergeRequest('mr-green'); // feature/dark-mode
  it.each([
    { name: 'equality', spec: 'feature/dark-mode', ok: true },
    { name: 'in', spec: { in: ['master', 'feature/dark-mode'] }, ok: true },
    { name: 'glob within a segment', spec: { glob: 'feature/*' }, ok: true },
    { name: 'glob * does not cross a slash', spec: { glob: '*' }, ok: false },
    { name: 'matches', spec: { matches: '^feature/' }, ok: true },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ source_branch: spec }, mr)).toEqual({ value: 'feature/dark-mode', ok });
  });

  it('is unknown on an issue, and never matches there', () => {
    expect(runCondition({ source_branch: { glob: '**' } }, issue('issue-open'))).toEqual({
      value: null,
      ok: false,
      unknown: true,
      note: 'applies to merge requests only',
    });
  });
});
