import { describe, expect, it } from 'vitest';
import { describeCondition, issue, mergeRequest, runCondition } from '../support.ts';

const withLevel = (authorAccess: number) => mergeRequest('mr-green', { authorAccess });

describe('author_access condition', () => {
  it.each([
    { spec: 'developer', level: 30, ok: true, value: 'developer (30)' },
    { spec: 'developer', level: 40, ok: true, value: 'master (40)' },
    { spec: 'developer', level: 20, ok: false, value: 'reporter (20)' },
    { spec: { at_least: 'master' }, level: 30, ok: false, value: 'developer (30)' },
    { spec: { at_least: 'owner' }, level: 50, ok: true, value: 'owner (50)' },
    { spec: { below: 'developer' }, level: 0, ok: true, value: 'none' },
    { spec: { below: 'developer' }, level: 10, ok: true, value: 'guest (10)' },
    { spec: { below: 'developer' }, level: 30, ok: false, value: 'developer (30)' },
    { spec: { at_least: 'reporter', below: 'master' }, level: 20, ok: true, value: 'reporter (20)' },
    { spec: { at_least: 'reporter', below: 'master' }, level: 40, ok: false, value: 'master (40)' },
    { spec: 'guest', level: 0, ok: false, value: 'none' },
  ])('$spec on $value', ({ spec, level, ok, value }) => {
    expect(runCondition({ author_access: spec }, withLevel(level))).toEqual({ value, ok });
  });

  it("reads an issue's author too", () => {
    expect(runCondition({ author_access: 'reporter' }, issue('issue-open', { authorAccess: 20 }))).toEqual({
      value: 'reporter (20)',
      ok: true,
    });
  });

  it('is unknown, never holding, when the level was not read (not even under not)', () => {
    const unread = { ...mergeRequest('mr-green') };
    delete unread.authorAccess;
    const unknown = {
      value: null,
      ok: false,
      unknown: true,
      note: "the author's access was not read",
    };
    expect(runCondition({ author_access: { below: 'developer' } }, unread)).toEqual(unknown);
    expect(runCondition({ not: { author_access: 'developer' } }, unread)).toMatchObject({
      ok: false,
      unknown: true,
    });
  });

  it('refuses what is not a level, and an empty object', () => {
    expect(() => runCondition({ author_access: 'admin' }, withLevel(30))).toThrow();
    expect(() => runCondition({ author_access: 30 }, withLevel(30))).toThrow();
    expect(() => runCondition({ author_access: {} }, withLevel(30))).toThrow(/at_least, below or both/);
    expect(() => runCondition({ author_access: { above: 'guest' } }, withLevel(30))).toThrow();
  });

  it('describes', () => {
    expect(describeCondition({ author_access: 'developer' })).toBe('author_access at least developer');
    expect(describeCondition({ author_access: { below: 'developer' } })).toBe(
      'author_access below developer',
    );
    expect(describeCondition({ author_access: { at_least: 'guest', below: 'master' } })).toBe(
      'author_access at least guest and below master',
    );
  });
});
