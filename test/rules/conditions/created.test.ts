import { describe, expect, it } from 'vitest';
import { describeCondition, issue, runCondition } from '../support.ts';

describe('created condition', () => {
  // Created 2016-03-01T09:00Z; the test clock is 2016-03-20T00:00Z: 18d 15h.
  const item = issue('issue-open');
  it.each([
    { name: 'older_than a shorter time', spec: { older_than: '2w' }, ok: true },
    { name: 'older_than a longer time', spec: { older_than: '19d' }, ok: false },
    { name: 'newer_than a longer time', spec: { newer_than: '1d12h' }, ok: false },
    { name: 'a window', spec: { older_than: '18d', newer_than: '19d' }, ok: true },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ created: spec }, item)).toEqual({
      value: '2016-03-01T09:00:00.000Z (18d 15h ago)',
      ok,
    });
  });

  it('reads the timestamps of hook payloads too', () => {
    const payloadForm = issue('issue-open', { created_at: '2016-03-19 23:00:00 UTC' });
    expect(runCondition({ created: { newer_than: '2h' } }, payloadForm).ok).toBe(true);
  });

  it('is unknown when the timestamp is unreadable', () => {
    expect(
      runCondition({ created: { older_than: '1d' } }, issue('issue-open', { created_at: 'yesterday' })),
    ).toEqual({
      value: null,
      ok: false,
      unknown: true,
      note: 'unreadable timestamp',
    });
  });

  it('describes', () => {
    expect(describeCondition({ created: { newer_than: '2h' } })).toBe('created less than 2h ago');
  });
});
