/**
 * The default gate of `merge`, `merge_when_build_succeeds` and `queue` (docs/rules.md#members-commands):
 * planned only on a member's authority: (a) the author has developer access, (b) the event is a
 * comment, confirmed by the API, of a member with developer access and no push came after it, or
 * (c) `authors: anyone`.
 */
import { describe, expect, it } from 'vitest';
import type { Guarantee } from '../../../src/rules/engine/define-condition.ts';
import type { MergeRequestSnapshot, Trigger } from '../../../src/rules/engine/snapshot.ts';
import { isSkip } from '../../../src/rules/engine/planned-call.ts';
import { mergeRequest, runAction } from '../support.ts';

const green: Guarantee[] = [{ kind: 'statuses', state: 'success', required: ['ci/build', 'ci/test'] }];
const building: Guarantee[] = [{ kind: 'statuses', state: 'pending', required: ['ci/build', 'ci/test'] }];
const SHA = '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c';
const alice = { id: 5, username: 'alice' };

const labelled: Trigger = { kind: 'merge_request', action: 'update', byBot: false };
/** A comment as the reader confirms it: text, author, her level, whether a push came after it. */
function comment(extra: Partial<Trigger> = {}): Trigger {
  return {
    kind: 'note',
    noteId: 41,
    note: '/hookbot merge',
    system: false,
    actor: alice,
    actorAccess: 30,
    changedSinceNote: false,
    byBot: false,
    ...extra,
  };
}
/** The fixtures' merge request (author bob) with his access level and the event. */
const outsider = (trigger: Trigger, authorAccess = 0, name: 'mr-green' | 'mr-pending' = 'mr-green') =>
  mergeRequest(name, { authorAccess, trigger });

const ACTIONS = [
  { name: 'merge', spec: 'merge', guarantees: green, fixture: 'mr-green' as const },
  {
    name: 'merge_when_build_succeeds',
    spec: 'merge_when_build_succeeds',
    guarantees: building,
    fixture: 'mr-pending' as const,
  },
  { name: 'queue', spec: { queue: { statuses: ['ci/test'] } }, guarantees: [], fixture: 'mr-green' as const },
];

function outcome(spec: unknown, mr: MergeRequestSnapshot, guarantees: readonly Guarantee[]) {
  const planned = runAction(spec, mr, guarantees);
  return isSkip(planned) ? planned : 'planned';
}

describe.each(ACTIONS)('the gate of $name', ({ spec, guarantees, fixture }) => {
  it('(a) plans it for an author with developer access or more', () => {
    for (const level of [30, 40, 50])
      expect(outcome(spec, outsider(labelled, level, fixture), guarantees)).toBe('planned');
  });

  it('blocks it for an author below developer on a label or any other event, saying what to do', () => {
    for (const level of [0, 10, 20]) {
      const result = outcome(spec, outsider(labelled, level, fixture), guarantees);
      expect(result).toMatchObject({ blocks: true });
      expect((result as { skipped: string }).skipped).toMatch(/docs\/rules\.md#members-commands/);
    }
  });

  it("(b) plans it on a developer's comment with no push after it", () => {
    expect(outcome(spec, outsider(comment(), 0, fixture), guarantees)).toBe('planned');
    expect(outcome(spec, outsider(comment({ actorAccess: 40 }), 20, fixture), guarantees)).toBe('planned');
  });

  it.each([
    {
      why: 'a reporter',
      trigger: comment({ actorAccess: 20 }),
      says: /@alice, who commented, has reporter \(20\) access/,
    },
    { why: 'no member', trigger: comment({ actorAccess: 0 }), says: /@alice, who commented, has no access/ },
    {
      why: 'a push after it',
      trigger: comment({ changedSinceNote: 'a push to its source branch' }),
      says: /a push to its source branch came after the comment of @alice/,
    },
    {
      why: 'a close and reopen after it (a push while closed leaves no note)',
      trigger: comment({ changedSinceNote: 'a close or reopen' }),
      says: /a close or reopen came after the comment of @alice/,
    },
    {
      why: 'a new target branch after it',
      trigger: comment({ changedSinceNote: 'a change of its target branch' }),
      says: /a change of its target branch came after the comment of @alice/,
    },
    { why: 'pushes not read', trigger: comment({ changedSinceNote: undefined }), says: /was not read/ },
    {
      why: 'level not read',
      trigger: comment({ actorAccess: undefined }),
      says: /the access of @alice, who commented, was not read/,
    },
    { why: "the bot's own", trigger: comment({ byBot: true }), says: /the bot's own/ },
  ])('blocks it on a comment of $why', ({ trigger, says }) => {
    const result = outcome(spec, outsider(trigger, 0, fixture), guarantees);
    expect(result).toMatchObject({ blocks: true });
    expect((result as { skipped: string }).skipped).toMatch(says);
  });

  it('blocks it on a system note (the server wrote it: no command) and when nobody confirmed the actor', () => {
    for (const trigger of [comment({ system: true }), { ...comment(), actor: undefined } as Trigger])
      expect(outcome(spec, outsider(trigger, 0, fixture), guarantees)).toMatchObject({ blocks: true });
  });

  it("blocks it when the author's access was not read: unknown is never enough", () => {
    const unread = outsider(labelled, 0, fixture);
    delete unread.authorAccess;
    expect(outcome(spec, unread, guarantees)).toMatchObject({
      skipped: expect.stringMatching(/^the access of its author \w+ to acme\/web was not read/),
      blocks: true,
    });
  });

  it('(c) plans it for anyone with authors: anyone', () => {
    const anyone =
      typeof spec === 'string'
        ? { [spec]: { authors: 'anyone' } }
        : { queue: { ...spec.queue, authors: 'anyone' } };
    expect(outcome(anyone, outsider(labelled, 0, fixture), guarantees)).toBe('planned');
    const members =
      typeof spec === 'string'
        ? { [spec]: { authors: 'members' } }
        : { queue: { ...spec.queue, authors: 'members' } };
    expect(outcome(members, outsider(labelled, 0, fixture), guarantees)).toMatchObject({ blocks: true });
  });
});

describe('the gate: reasons and approvals', () => {
  it('says why a label is no proof and what to do', () => {
    expect(runAction('merge', outsider(labelled, 20), green)).toEqual({
      skipped:
        "its author bob has reporter (20) access to acme/web, less than developer: a label is no proof that a member decided (a server may let an author label her own merge request, and the bot's own rules may label it); a comment command by a member with developer access, such as /hookbot merge where a rule takes it, is needed (docs/rules.md#members-commands)",
      blocks: true,
    });
  });

  it('records the approval in the queue call when a comment approved the head', () => {
    const [planned] = runAction({ queue: { statuses: ['ci/test'] } }, outsider(comment())) as unknown as {
      call: { args: Record<string, unknown> };
      reason: string;
    }[];
    expect(planned?.call.args.approval).toEqual({ by: 'alice', level: 30, noteId: 41, sha: SHA });
    expect(planned?.reason).toBe('queue for master (default) on the comment of @alice');
  });

  it("records it for a developer's merge request queued on a comment too; not on a label", () => {
    const args = (mr: MergeRequestSnapshot) =>
      (
        runAction({ queue: { statuses: ['ci/test'] } }, mr) as unknown as {
          call: { args: Record<string, unknown> };
        }[]
      )[0]?.call.args;
    expect(args(outsider(comment(), 30))?.approval).toEqual({ by: 'alice', level: 30, noteId: 41, sha: SHA });
    expect(args(outsider(labelled, 30))).not.toHaveProperty('approval');
    // A comment the merge request changed after approves nothing, and the evaluation it set off does
    // not fall back on the author's own access either: a master's command replayed on a developer's
    // later push must not queue it (red team of issue 36). Her label rule decides for her.
    expect(args(outsider(comment({ changedSinceNote: 'a push to its source branch' }), 30))).toBeUndefined();
    expect(
      outcome(
        { queue: { statuses: ['ci/test'] } },
        outsider(comment({ changedSinceNote: 'a push to its source branch' }), 30),
        [],
      ),
    ).toMatchObject({ blocks: true });
  });

  it('never records an approval with authors: anyone', () => {
    const [planned] = runAction(
      { queue: { statuses: ['ci/test'], authors: 'anyone' } },
      outsider(comment()),
    ) as unknown as { call: { args: Record<string, unknown> } }[];
    expect(planned?.call.args).not.toHaveProperty('approval');
  });
});
