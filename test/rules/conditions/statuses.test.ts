import { describe, expect, it } from 'vitest';
import type { CommitStatusSnapshot } from '../../../src/rules/engine/snapshot.ts';
import { describeCondition, issue, mergeRequest, runCondition } from '../support.ts';

const status = (name: string, state: string, allowFailure = false): CommitStatusSnapshot => ({
  name,
  status: state,
  allow_failure: allowFailure,
});

describe('statuses condition', () => {
  const required = ['ci/build', 'ci/test'];
  it.each([
    {
      name: 'success: all passed',
      statuses: [status('ci/build', 'success'), status('ci/test', 'success')],
      state: 'success',
      ok: true,
    },
    {
      name: 'success: a missing required status is never success',
      statuses: [status('ci/build', 'success')],
      state: 'success',
      ok: false,
    },
    { name: 'success: nothing reported at all', statuses: [], state: 'success', ok: false },
    {
      name: 'success: one still running',
      statuses: [status('ci/build', 'success'), status('ci/test', 'running')],
      state: 'success',
      ok: false,
    },
    {
      name: 'success: a failure allowed to fail passes',
      statuses: [status('ci/build', 'success'), status('ci/test', 'failed', true)],
      state: 'success',
      ok: true,
    },
    {
      name: 'success: canceled never passes',
      statuses: [status('ci/build', 'success'), status('ci/test', 'canceled', true)],
      state: 'success',
      ok: false,
    },
    {
      name: 'success: statuses not required are ignored',
      statuses: [status('ci/build', 'success'), status('ci/test', 'success'), status('lint', 'failed')],
      state: 'success',
      ok: true,
    },
    {
      name: 'pending: one running, one passed',
      statuses: [status('ci/build', 'success'), status('ci/test', 'running')],
      state: 'pending',
      ok: true,
    },
    {
      name: 'pending: one pending',
      statuses: [status('ci/build', 'pending'), status('ci/test', 'pending')],
      state: 'pending',
      ok: true,
    },
    {
      name: 'pending: one required not reported yet',
      statuses: [status('ci/build', 'running')],
      state: 'pending',
      ok: false,
    },
    { name: 'pending: no status at all', statuses: [], state: 'pending', ok: false },
    {
      name: 'pending: one already failed',
      statuses: [status('ci/build', 'failed'), status('ci/test', 'running')],
      state: 'pending',
      ok: false,
    },
    {
      name: 'pending: all finished',
      statuses: [status('ci/build', 'success'), status('ci/test', 'success')],
      state: 'pending',
      ok: false,
    },
    {
      name: 'failed: one failed',
      statuses: [status('ci/build', 'failed'), status('ci/test', 'running')],
      state: 'failed',
      ok: true,
    },
    { name: 'failed: none failed', statuses: [status('ci/build', 'success')], state: 'failed', ok: false },
    {
      name: 'missing: one not reported',
      statuses: [status('ci/build', 'success')],
      state: 'missing',
      ok: true,
    },
  ])('$name', ({ statuses, state, ok }) => {
    const mr = mergeRequest('mr-green', { statuses });
    expect(runCondition({ statuses: { required, state } }, mr).ok).toBe(ok);
  });

  it('defaults to state success', () => {
    expect(runCondition({ statuses: { required } }, mergeRequest('mr-pending')).ok).toBe(false);
    expect(runCondition({ statuses: { required } }, mergeRequest('mr-green')).ok).toBe(true);
  });

  it('shows each required status, and missing ones', () => {
    const mr = mergeRequest('mr-green', {
      statuses: [status('ci/build', 'success'), status('lint', 'failed', true)],
    });
    expect(runCondition({ statuses: { required: ['ci/build', 'ci/test', 'lint'] } }, mr)).toEqual({
      value: { 'ci/build': 'success', 'ci/test': 'missing', lint: 'failed (allowed to fail)' },
      ok: false,
    });
  });

  it.each([
    { name: 'the head commit is unknown', changes: { sha: null } },
    { name: 'the statuses were not read', changes: { statuses: null } },
  ])('is unknown when $name', ({ changes }) => {
    expect(
      runCondition({ statuses: { required, state: 'failed' } }, mergeRequest('mr-green', changes)),
    ).toEqual({
      value: null,
      ok: false,
      unknown: true,
      note: 'the statuses of the head commit were not read',
    });
  });

  it('is unknown on an issue', () => {
    expect(runCondition({ statuses: { required } }, issue('issue-open')).unknown).toBe(true);
  });

  it('describes', () => {
    expect(describeCondition({ statuses: { required, state: 'pending' } })).toBe(
      'statuses ci/build, ci/test are pending or running (none failed or missing)',
    );
  });
});
