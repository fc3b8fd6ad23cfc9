import { describe, expect, it } from 'vitest';
import { mergeRequest, runCondition } from '../support.ts';

describe('target_branch condition', () => {
  it.each([
    { name: 'equality', spec: 'master', ok: true },
    { name: 'in', spec: { in: ['main', 'develop'] }, ok: false },
    { name: 'glob', spec: { glob: 'release/*' }, ok: false },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ target_branch: spec }, mergeRequest('mr-green'))).toEqual({ value: 'master', ok });
  });
});
