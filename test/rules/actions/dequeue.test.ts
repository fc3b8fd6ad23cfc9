/**
 * The `dequeue` action (a member's `/hookbot dequeue`, docs/rules.md#hookbot-queue-and-hookbot-dequeue):
 * on a comment, planned only for a commenter with developer access or more (`commenters: anyone`
 * waives it) and only when nothing changed the merge request after it (the head it was written on);
 * on any other event, the rule alone decides.
 */
import { describe, expect, it } from 'vitest';
import type { Trigger } from '../../../src/rules/engine/snapshot.ts';
import { issue, mergeRequest, runAction } from '../support.ts';

const alice = { id: 5, username: 'alice' };
function comment(extra: Partial<Trigger> = {}): Trigger {
  return {
    kind: 'note',
    noteId: 41,
    note: '/hookbot dequeue',
    system: false,
    actor: alice,
    actorAccess: 30,
    changedSinceNote: false,
    byBot: false,
    ...extra,
  };
}
const taken = (by: string) => [
  {
    call: {
      op: 'mergeQueue.dequeue',
      args: {
        project: 8,
        merge_request_id: mergeRequest('mr-green').id,
        sha: mergeRequest('mr-green').sha,
        by,
        // A member's command names its note: the executor takes out nothing a later command put back.
        ...(by === 'alice' ? { note: 41 } : {}),
      },
    },
    reason:
      by === 'alice' ? 'take out of its merge queue on the comment of @alice' : 'take out of its merge queue',
  },
];

describe('dequeue action', () => {
  it.each([
    { name: "a developer's comment", spec: 'dequeue', trigger: comment(), outcome: taken('alice') },
    {
      name: "a master's comment",
      spec: 'dequeue',
      trigger: comment({ actorAccess: 40 }),
      outcome: taken('alice'),
    },
    {
      name: "a reporter's comment",
      spec: 'dequeue',
      trigger: comment({ actorAccess: 20 }),
      outcome: {
        skipped:
          '@alice, who commented, has reporter (20) access: taking a merge request out of its queue asks developer (30) or more',
      },
    },
    {
      name: "a non-member's comment",
      spec: 'dequeue',
      trigger: comment({ actorAccess: 0 }),
      outcome: {
        skipped:
          '@alice, who commented, has no access: taking a merge request out of its queue asks developer (30) or more',
      },
    },
    {
      name: 'a comment whose author was not read',
      spec: 'dequeue',
      trigger: comment({ actorAccess: undefined }),
      outcome: { skipped: 'the access of @alice, who commented, was not read' },
    },
    {
      name: "the bot's own comment",
      spec: 'dequeue',
      trigger: comment({ byBot: true }),
      outcome: { skipped: "the comment is the bot's own" },
    },
    {
      name: 'a comment a push came after (a replayed delivery of an old command)',
      spec: 'dequeue',
      trigger: comment({ changedSinceNote: 'a push to its source branch' }),
      outcome: {
        skipped:
          'a push to its source branch came after the comment of @alice: the command takes out only the head it was written on',
      },
    },
    {
      name: 'a comment whose later changes were not read',
      spec: 'dequeue',
      trigger: comment({ changedSinceNote: undefined }),
      outcome: { skipped: 'what changed the merge request after the comment of @alice was not read' },
    },
    {
      name: "a reporter's comment with commenters: anyone",
      spec: { dequeue: { commenters: 'anyone' } },
      trigger: comment({ actorAccess: 20 }),
      outcome: taken('alice'),
    },
    {
      name: 'another event (a label): the rule decides',
      spec: 'dequeue',
      trigger: { kind: 'merge_request', action: 'update', byBot: false } as Trigger,
      outcome: taken('rule test rule'),
    },
  ])('$name', ({ spec, trigger, outcome }) => {
    expect(runAction(spec, mergeRequest('mr-green', { trigger }))).toEqual(outcome);
  });

  it('does not apply to issues', () => {
    expect(runAction('dequeue', issue('issue-open'))).toEqual({ skipped: 'applies to merge requests only' });
  });
});
