import { describe, expect, it } from 'vitest';
import { describeCondition, issue, mergeRequest, runCondition } from '../support.ts';

// all.ts, any.ts and not.ts share their three-valued logic (combine.ts): one table for the three.
describe('all, any and not conditions', () => {
  const item = mergeRequest('mr-unread'); // changed files not read: `files` is unknown
  const yes = { state: 'opened' };
  const no = { state: 'closed' };
  const unknown = { files: { any_match: ['**'] } };
  it.each([
    { name: 'all: every one holds', spec: { all: [yes, yes] }, ok: true, isUnknown: false },
    { name: 'all: one fails', spec: { all: [yes, no] }, ok: false, isUnknown: false },
    { name: 'all: unknown and true is unknown', spec: { all: [yes, unknown] }, ok: false, isUnknown: true },
    { name: 'all: unknown and false is false', spec: { all: [no, unknown] }, ok: false, isUnknown: false },
    { name: 'any: one holds', spec: { any: [no, yes] }, ok: true, isUnknown: false },
    { name: 'any: none holds', spec: { any: [no, no] }, ok: false, isUnknown: false },
    { name: 'any: unknown and true is true', spec: { any: [unknown, yes] }, ok: true, isUnknown: false },
    { name: 'any: unknown and false is unknown', spec: { any: [unknown, no] }, ok: false, isUnknown: true },
    { name: 'not: of false', spec: { not: no }, ok: true, isUnknown: false },
    { name: 'not: of true', spec: { not: yes }, ok: false, isUnknown: false },
    {
      name: 'not: of unknown stays unknown (missing data never matches)',
      spec: { not: unknown },
      ok: false,
      isUnknown: true,
    },
    { name: 'not: of a list is not all', spec: { not: [yes, no] }, ok: true, isUnknown: false },
    { name: 'nesting', spec: { any: [{ all: [yes, { not: no }] }, no] }, ok: true, isUnknown: false },
  ])('$name', ({ spec, ok, isUnknown }) => {
    const verdict = runCondition(spec, item);
    expect(verdict.ok).toBe(ok);
    expect(verdict.unknown === true).toBe(isUnknown);
  });

  it('records each nested verdict', () => {
    expect(
      runCondition({ any: [{ state: 'closed' }, { labels: { any: ['ui'] } }] }, issue('issue-open')),
    ).toEqual({
      value: '1 of 2 hold',
      ok: true,
      children: [
        { describe: 'state is closed', value: 'opened', ok: false },
        { describe: 'labels include any of [ui]', value: ['ui'], ok: true },
      ],
    });
  });

  it('an MR-only condition under not does not match an issue', () => {
    expect(runCondition({ not: { work_in_progress: true } }, issue('issue-open')).ok).toBe(false);
  });

  it('describes nested conditions', () => {
    expect(describeCondition({ not: [{ state: 'closed' }, { labels: { any: ['a'] } }] })).toBe(
      'not all of (state is closed; labels include any of [a])',
    );
  });
});
