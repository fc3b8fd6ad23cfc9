import { describe, expect, it } from 'vitest';
import { describeCondition, issue, mergeRequest, runCondition } from '../support.ts';

describe('state condition', () => {
  it.each([
    { name: 'opened on an open issue', spec: 'opened', state: 'opened', ok: true },
    { name: 'opened on a closed issue', spec: 'opened', state: 'closed', ok: false },
    {
      name: 'opened includes reopened, as the server lists them',
      spec: 'opened',
      state: 'reopened',
      ok: true,
    },
    { name: 'reopened alone does not include opened', spec: 'reopened', state: 'opened', ok: false },
    { name: 'in: one of several', spec: { in: ['closed', 'merged'] }, state: 'merged', ok: true },
  ])('$name', ({ spec, state, ok }) => {
    expect(runCondition({ state: spec }, mergeRequest('mr-green', { state }))).toEqual({ value: state, ok });
  });

  it('reads issues too', () => {
    expect(runCondition({ state: 'closed' }, issue('issue-open')).ok).toBe(false);
  });

  it('describes', () => {
    expect(describeCondition({ state: { in: ['closed', 'merged'] } })).toBe(
      'state is one of [closed, merged]',
    );
  });
});
