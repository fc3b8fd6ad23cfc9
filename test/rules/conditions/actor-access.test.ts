import { describe, expect, it } from 'vitest';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { describeCondition, issue, mergeRequest, runCondition } from '../support.ts';

const alice = { id: 5, username: 'alice' };
const comment = (actorAccess: number | undefined): Trigger => ({
  kind: 'note',
  noteId: 41,
  note: '/hookbot merge',
  actor: alice,
  byBot: false,
  ...(actorAccess !== undefined ? { actorAccess } : {}),
});
const onMr = (trigger: Trigger) => mergeRequest('mr-green', { trigger });

describe('actor_access condition', () => {
  it.each([
    { spec: 'developer', level: 30, ok: true, value: 'developer (30)' },
    { spec: 'developer', level: 20, ok: false, value: 'reporter (20)' },
    { spec: 'developer', level: 0, ok: false, value: 'none' },
    { spec: { at_least: 'master' }, level: 50, ok: true, value: 'owner (50)' },
    { spec: { below: 'developer' }, level: 10, ok: true, value: 'guest (10)' },
  ])("$spec on a comment's author with $value", ({ spec, level, ok, value }) => {
    expect(runCondition({ actor_access: spec }, onMr(comment(level)))).toEqual({ value, ok });
  });

  it('reads comments on issues too', () => {
    expect(runCondition({ actor_access: 'reporter' }, issue('issue-open', { trigger: comment(20) }))).toEqual(
      {
        value: 'reporter (20)',
        ok: true,
      },
    );
  });

  it('is unknown for every event but a comment whose author the server confirmed: unknown never holds', () => {
    const unknown = {
      value: null,
      ok: false,
      unknown: true,
      note: 'the server confirms no actor for this event',
    };
    // A label change, a push, a sweep: the API cannot say who did it, whatever the payload claims.
    for (const trigger of [
      { kind: 'merge_request', action: 'update', byBot: false },
      { kind: 'merge_request', action: 'update', byBot: false, actor: alice, actorAccess: 40 },
      { kind: 'schedule', byBot: false },
      { kind: 'note', noteId: 41, byBot: false },
    ] as Trigger[])
      expect(runCondition({ actor_access: { below: 'developer' } }, onMr(trigger))).toEqual(unknown);
  });

  it("is unknown when the comment author's level was not read", () => {
    expect(runCondition({ not: { actor_access: 'developer' } }, onMr(comment(undefined)))).toMatchObject({
      ok: false,
      unknown: true,
    });
  });

  it('describes', () => {
    expect(describeCondition({ actor_access: 'developer' })).toBe('actor_access at least developer');
    expect(describeCondition({ actor_access: { below: 'reporter' } })).toBe('actor_access below reporter');
  });
});
