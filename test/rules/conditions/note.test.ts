import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runCondition } from '../support.ts';

describe('note condition', () => {
  const command = mergeRequest('note-command'); // "/hookbot merge please"
  it.each([
    { name: 'a command at the start', spec: { matches: '^/hookbot merge\\b' }, ok: true },
    { name: 'a word boundary stops a longer word', spec: { matches: '^/hookbot merges\\b' }, ok: false },
    { name: 'contains', spec: { contains: 'please' }, ok: true },
    { name: 'equality is the whole text', spec: '/hookbot merge', ok: false },
  ])('$name', ({ spec, ok }) => {
    expect(runCondition({ note: spec }, command)).toEqual({ value: '/hookbot merge please', ok });
  });

  it('does not hold on an event that is not a comment', () => {
    expect(runCondition({ note: { matches: '.*' } }, issue('issue-open'))).toEqual({
      value: null,
      ok: false,
      note: 'the event is not a comment',
    });
  });
});
