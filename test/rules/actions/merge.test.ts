import { describe, expect, it } from 'vitest';
import type { Guarantee } from '../../../src/rules/engine/define-condition.ts';
import { issue, mergeRequest, runAction } from '../support.ts';

const green: Guarantee[] = [{ kind: 'statuses', state: 'success', required: ['ci/build', 'ci/test'] }];
const SHA = '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c';

describe('merge action', () => {
  it('merges pinned to the evaluated head commit', () => {
    expect(
      runAction(
        { merge: { remove_source_branch: true, message: 'Merge !{{ iid }}: {{ title }}' } },
        mergeRequest('mr-green'),
        green,
      ),
    ).toEqual([
      {
        call: {
          op: 'mergeRequests.merge',
          args: {
            project: 8,
            merge_request_id: 7,
            sha: SHA,
            should_remove_source_branch: true,
            merge_commit_message: 'Merge !1: Add dark mode',
          },
        },
        reason: 'merge at 1f2e3d4c: ci/build, ci/test passed',
      },
    ]);
  });

  it('may be written bare', () => {
    expect(runAction('merge', mergeRequest('mr-green'), green)).toEqual([
      {
        call: { op: 'mergeRequests.merge', args: { project: 8, merge_request_id: 7, sha: SHA } },
        reason: 'merge at 1f2e3d4c: ci/build, ci/test passed',
      },
    ]);
  });

  it.each([
    {
      name: 'no statuses condition held in the rule',
      item: mergeRequest('mr-green'),
      guarantees: [],
      why: 'no `statuses: { state: success }` condition held in this rule: a merge is never planned without green required statuses',
    },
    {
      name: 'only a pending statuses condition held',
      item: mergeRequest('mr-green'),
      guarantees: [{ kind: 'statuses', state: 'pending', required: ['ci/build'] }] as Guarantee[],
      why: 'no `statuses: { state: success }` condition held in this rule: a merge is never planned without green required statuses',
    },
    {
      name: 'a required status is missing on the head',
      item: mergeRequest('mr-green', {
        statuses: [{ name: 'ci/build', status: 'success', allow_failure: false }],
      }),
      guarantees: green,
      why: 'required status ci/test is missing',
    },
    {
      name: 'a required status still runs',
      item: mergeRequest('mr-pending'),
      guarantees: green,
      why: 'required status ci/test is running',
    },
    {
      name: 'the head commit has no status',
      item: mergeRequest('mr-no-status'),
      guarantees: green,
      why: 'required status ci/build is missing',
    },
    {
      name: 'the head commit is unknown',
      item: mergeRequest('mr-green', { sha: null }),
      guarantees: green,
      why: 'the head commit is unknown',
    },
    {
      name: 'work in progress',
      item: mergeRequest('mr-green', { work_in_progress: true }),
      guarantees: green,
      why: 'the merge request is work in progress',
    },
    {
      name: 'already merged',
      item: mergeRequest('mr-green', { state: 'merged' }),
      guarantees: green,
      why: 'the merge request is merged',
    },
    {
      name: 'closed',
      item: mergeRequest('mr-green', { state: 'closed' }),
      guarantees: green,
      why: 'the merge request is closed',
    },
    {
      name: 'conflicts',
      item: mergeRequest('mr-green', { merge_status: 'cannot_be_merged' }),
      guarantees: green,
      why: 'the merge request has conflicts (cannot_be_merged)',
    },
  ])('holds back when $name', ({ item, guarantees, why }) => {
    expect(runAction('merge', item, guarantees)).toEqual({ skipped: why, blocks: true });
  });

  it('does not apply to issues', () => {
    expect(runAction('merge', issue('issue-open'), green)).toEqual({
      skipped: 'applies to merge requests only',
    });
  });
});
