import { describe, expect, it } from 'vitest';
import type { Guarantee } from '../../../src/rules/engine/define-condition.ts';
import { mergeRequest, runAction } from '../support.ts';

const building: Guarantee[] = [{ kind: 'statuses', state: 'pending', required: ['ci/build', 'ci/test'] }];

describe('merge_when_build_succeeds action', () => {
  it('plans the merge on a head commit whose required statuses are running, pinned to that commit (the bot merges itself)', () => {
    expect(
      runAction(
        { merge_when_build_succeeds: { remove_source_branch: true } },
        mergeRequest('mr-pending'),
        building,
      ),
    ).toEqual([
      {
        call: {
          op: 'mergeRequests.mergeWhenBuildSucceeds',
          args: {
            project: 8,
            merge_request_id: 8,
            sha: '2a3b4c5d6e7f80912a3b4c5d6e7f80912a3b4c5d',
            should_remove_source_branch: true,
          },
        },
        reason: 'merge when the build succeeds at 2a3b4c5d: ci/build, ci/test running',
      },
    ]);
  });

  it("with on_server, arms the server's merge too; never for a fork, nor on a comment", () => {
    expect(
      runAction({ merge_when_build_succeeds: { on_server: true } }, mergeRequest('mr-pending'), building),
    ).toMatchObject([
      {
        call: { args: { on_server: true } },
        reason: 'arm merge_when_build_succeeds at 2a3b4c5d: ci/build, ci/test running',
      },
    ]);
    const fork = mergeRequest('mr-pending', { source_project_id: 99 });
    expect(runAction({ merge_when_build_succeeds: { on_server: true } }, fork, building)).toMatchObject({
      blocks: true,
      skipped: expect.stringContaining("the fork's own build"),
    });
    // The bot's own merge judges the statuses it trusts: a fork's merge request on a member's authority.
    expect(runAction('merge_when_build_succeeds', fork, building)).toHaveLength(1);
  });

  it('plans nothing when the bot already merges it itself (its watch) or the server is armed', () => {
    for (const item of [
      mergeRequest('mr-pending', { botMerge: true }),
      mergeRequest('mr-pending', { merge_when_build_succeeds: true }),
    ])
      expect(runAction('merge_when_build_succeeds', item, building)).toMatchObject({
        skipped: 'merge_when_build_succeeds is already set',
      });
  });

  it.each([
    {
      name: 'the head commit has no status yet',
      item: mergeRequest('mr-no-status'),
      guarantees: building,
      why: 'the head commit has no status yet: merge_when_build_succeeds is never armed on it',
    },
    {
      name: 'the statuses were not read',
      item: mergeRequest('mr-pending', { statuses: null }),
      guarantees: building,
      why: 'the head commit has no status yet: merge_when_build_succeeds is never armed on it',
    },
    {
      name: 'no pending statuses condition held',
      item: mergeRequest('mr-pending'),
      guarantees: [],
      why: 'no `statuses: { state: pending }` condition held in this rule: nothing says a build is running',
    },
    {
      name: 'a required status is not reported',
      item: mergeRequest('mr-pending', {
        statuses: [{ name: 'ci/build', status: 'running', allow_failure: false }],
      }),
      guarantees: building,
      why: 'required status ci/test is missing',
    },
    {
      name: 'a required status failed',
      item: mergeRequest('mr-pending', {
        statuses: [
          { name: 'ci/build', status: 'failed', allow_failure: false },
          { name: 'ci/test', status: 'running', allow_failure: false },
        ],
      }),
      guarantees: building,
      why: 'required status ci/build is failed',
    },
    {
      name: 'everything already finished',
      item: mergeRequest('mr-green'),
      guarantees: building,
      why: 'no required status is pending or running',
    },
    {
      name: 'work in progress',
      item: mergeRequest('mr-pending', { work_in_progress: true }),
      guarantees: building,
      why: 'the merge request is work in progress',
    },
  ])('holds back when $name', ({ item, guarantees, why }) => {
    expect(runAction('merge_when_build_succeeds', item, guarantees)).toEqual({ skipped: why, blocks: true });
  });

  it('plans nothing when it is already set', () => {
    expect(
      runAction(
        'merge_when_build_succeeds',
        mergeRequest('mr-pending', { merge_when_build_succeeds: true }),
        building,
      ),
    ).toEqual({
      skipped: 'merge_when_build_succeeds is already set',
    });
  });
});
