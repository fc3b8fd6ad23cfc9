import { describe, expect, it } from 'vitest';
import { issue, mergeRequest, runAction } from '../support.ts';

const SHA = '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c';

describe('status action', () => {
  it('posts a status on the head commit, with placeholders', () => {
    expect(
      runAction(
        {
          status: {
            name: 'hookbot/changelog',
            state: 'failed',
            description: '!{{ iid }} lacks a changelog',
            target_url: 'https://x/{{ iid }}',
          },
        },
        mergeRequest('mr-green'),
      ),
    ).toEqual([
      {
        call: {
          op: 'statuses.create',
          args: {
            project: 8,
            sha: SHA,
            state: 'failed',
            name: 'hookbot/changelog',
            ref: 'feature/dark-mode',
            description: '!1 lacks a changelog',
            target_url: 'https://x/1',
          },
        },
        reason: 'status hookbot/changelog: failed on 1f2e3d4c',
      },
    ]);
  });

  it("posts on the fork's project for a merge request from a fork (where its head commit and statuses live)", () => {
    const fromFork = mergeRequest('mr-green', { source_project_id: 21 });
    const planned = runAction({ status: { name: 'hookbot/x', state: 'success' } }, fromFork);
    expect(planned).toMatchObject([{ call: { op: 'statuses.create', args: { project: 21, sha: SHA } } }]);
    // Same project as the merge request: posted there, as before.
    const local = mergeRequest('mr-green', { source_project_id: 8 });
    expect(runAction({ status: { name: 'hookbot/x', state: 'success' } }, local)).toMatchObject([
      { call: { args: { project: 8 } } },
    ]);
  });

  it.each([
    {
      name: 'the head commit is unknown',
      item: mergeRequest('mr-unread'),
      outcome: { skipped: 'the head commit is unknown' },
    },
    {
      name: 'the same finished status stands',
      item: mergeRequest('mr-green', {
        statuses: [{ name: 'hookbot/x', status: 'success', allow_failure: false }],
      }),
      outcome: { skipped: 'hookbot/x is already success on 1f2e3d4c' },
    },
    {
      name: 'the item is an issue',
      item: issue('issue-open'),
      outcome: { skipped: 'applies to merge requests only' },
    },
  ])('plans nothing when $name', ({ item, outcome }) => {
    expect(runAction({ status: { name: 'hookbot/x', state: 'success' } }, item)).toEqual(outcome);
  });

  it('posts a finished status again when its description is known to differ', () => {
    const item = mergeRequest('mr-green', {
      statuses: [{ name: 'hookbot/x', status: 'success', allow_failure: false, description: 'old' }],
    });
    expect(
      runAction({ status: { name: 'hookbot/x', state: 'success', description: 'new' } }, item),
    ).toHaveLength(1);
  });

  it('posts a pending status again when its description changed (a new blocking reason), not when it is the same', () => {
    const item = mergeRequest('mr-green', {
      statuses: [{ name: 'hookbot/x', status: 'pending', allow_failure: false, description: 'old' }],
    });
    expect(
      runAction({ status: { name: 'hookbot/x', state: 'pending', description: 'new' } }, item),
    ).toMatchObject([{ call: { op: 'statuses.create', args: { state: 'pending', description: 'new' } } }]);
    expect(runAction({ status: { name: 'hookbot/x', state: 'pending', description: 'old' } }, item)).toEqual({
      skipped: 'hookbot/x is already pending on 1f2e3d4c',
    });
  });

  it("a repository rule's: the call says so (the executor marks it); it stands with the mark, never without", () => {
    const spec = { status: { name: 'ci/test', state: 'success', description: 'tests passed' } };
    const bare = mergeRequest('mr-green', { statuses: [] });
    expect(runAction(spec, bare, [], 'mine', true)).toMatchObject([
      {
        call: {
          op: 'statuses.create',
          args: { name: 'ci/test', description: 'tests passed', repository: true },
        },
      },
    ]);
    expect(runAction(spec, bare)).toMatchObject([
      { call: { args: expect.not.objectContaining({ repository: true }) } },
    ]);
    const marked = mergeRequest('mr-green', {
      statuses: [
        {
          name: 'ci/test',
          status: 'success',
          allow_failure: false,
          description: '[.hookbot.yml] tests passed',
        },
      ],
    });
    expect(runAction(spec, marked, [], 'mine', true)).toEqual({
      skipped: 'ci/test is already success on 1f2e3d4c',
    });
    // The operator's rule wants its own, unmarked: the marked one is not it.
    expect(runAction(spec, marked)).toMatchObject([{ call: { op: 'statuses.create' } }]);
    const unmarked = mergeRequest('mr-green', {
      statuses: [{ name: 'ci/test', status: 'success', allow_failure: false, description: 'tests passed' }],
    });
    expect(runAction(spec, unmarked, [], 'mine', true)).toMatchObject([
      { call: { op: 'statuses.create', args: { repository: true } } },
    ]);
  });
});
