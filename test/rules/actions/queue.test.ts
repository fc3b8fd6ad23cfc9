import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRules } from '../../../src/rules/grammar/load.ts';
import { formatProblem } from '../../../src/rules/grammar/problem.ts';
import { mergeRequest, rulesFrom, runAction } from '../support.ts';

describe('queue action', () => {
  it('plans the merge request into its queue with the options of the rule; no statuses condition is needed', () => {
    expect(
      runAction(
        {
          queue: {
            statuses: ['ci/test'],
            name: 'release',
            priority_labels: ['urgent'],
            status_timeout: '30m',
            max_updates: 2,
            remove_source_branch: true,
            message: 'Merge !{{ iid }}',
          },
        },
        mergeRequest('mr-green'),
      ),
    ).toEqual([
      {
        call: {
          op: 'mergeQueue.enqueue',
          args: {
            project: 8,
            merge_request_id: 7,
            iid: 1,
            sha: '1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c',
            project_path: 'acme/web',
            target_branch: 'master',
            queue: 'release',
            priority: 0,
            required: ['ci/test'],
            status_timeout_ms: 30 * 60_000,
            max_updates: 2,
            should_remove_source_branch: true,
            merge_commit_message: 'Merge !1',
          },
        },
        reason: 'queue for master (release)',
      },
    ]);
  });

  it('gives a merge request with a priority label priority, and defaults the rest', () => {
    const [planned] = runAction(
      { queue: { statuses: ['ci/test'], priority_labels: ['automerge'] } },
      mergeRequest('mr-green'),
    ) as unknown as { call: { args: Record<string, unknown> } }[];
    expect(planned?.call.args).toMatchObject({
      queue: 'default',
      priority: 1,
      status_timeout_ms: 3_600_000,
      max_updates: 3,
    });
  });

  it('plans a merge train with depth and batch, and leaves them out at their serial defaults', () => {
    const [train] = runAction(
      { queue: { statuses: ['ci/test'], depth: 5, batch: 4 } },
      mergeRequest('mr-green'),
    ) as unknown as { call: { args: Record<string, unknown> } }[];
    expect(train?.call.args).toMatchObject({ depth: 5, batch: 4 });
    const [serial] = runAction(
      { queue: { statuses: ['ci/test'], depth: 1, batch: 1 } },
      mergeRequest('mr-green'),
    ) as unknown as { call: { args: Record<string, unknown> } }[];
    expect(serial?.call.args).not.toHaveProperty('depth');
    expect(serial?.call.args).not.toHaveProperty('batch');
  });

  it('plans depth: auto as a window with its bounds (2..10 unless written), never a fixed depth', () => {
    const args = (depth: unknown) =>
      (
        runAction({ queue: { statuses: ['ci/test'], depth } }, mergeRequest('mr-green')) as unknown as {
          call: { args: Record<string, unknown> };
        }[]
      )[0]!.call.args;
    expect(args('auto')).toMatchObject({ depth_auto: { min: 2, max: 10 } });
    expect(args('auto')).not.toHaveProperty('depth');
    expect(args({ min: 1, max: 6 })).toMatchObject({ depth_auto: { min: 1, max: 6 } });
    expect(args({ max: 4 })).toMatchObject({ depth_auto: { min: 2, max: 4 } });
    expect(args({ min: 12 })).toMatchObject({ depth_auto: { min: 12, max: 12 } });
    expect(args(3)).toMatchObject({ depth: 3 });
    expect(args(3)).not.toHaveProperty('depth_auto');
  });

  it.each([
    { option: 'depth: 21', says: 'depth is at most 20 cars tested at once' },
    { option: 'depth: 0', says: '"depth" must be at least 1' },
    { option: 'depth: 2.5', says: '"depth" must be a whole number, auto or a mapping, got number 2.5' },
    {
      option: 'depth: autoo',
      says: '"depth" must be one of auto, got the text "autoo" (did you mean "auto"?)',
    },
    {
      option: 'depth: { min: 5, max: 3 }',
      says: 'the lower bound of the depth window is above its upper bound',
    },
    { option: 'depth: { max: 1 }', says: '"max" must be at least 2' },
    { option: 'depth: { max: 21 }', says: 'depth is at most 20 cars tested at once' },
    { option: 'batch: 11', says: 'batch is at most 10 merge requests per car' },
    { option: 'batch: 0', says: '"batch" must be at least 1' },
  ])('refuses $option with a clear message', async ({ option, says }) => {
    const dir = await mkdtemp(join(tmpdir(), 'hookbot-queue-train-'));
    try {
      await writeFile(
        join(dir, 'default.yml'),
        `rules:\n  - name: q\n    on: [merge_request.update]\n    for: merge_requests\n    do: [ { queue: { statuses: [ci/test], ${option} } } ]\n`,
      );
      const problems = (await loadRules(dir)).problems.map(formatProblem).join('\n');
      expect(problems).toContain(says);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("plans `retries` when the rule says it (a merge train's rebuilds of a failed car); refuses more than 3", async () => {
    const [train] = runAction(
      { queue: { statuses: ['ci/test'], depth: 2, retries: 0 } },
      mergeRequest('mr-green'),
    ) as unknown as { call: { args: Record<string, unknown> } }[];
    expect(train?.call.args).toMatchObject({ depth: 2, retries: 0 });
    const [plain] = runAction(
      { queue: { statuses: ['ci/test'], depth: 2 } },
      mergeRequest('mr-green'),
    ) as unknown as { call: { args: Record<string, unknown> } }[];
    expect(plain?.call.args).not.toHaveProperty('retries');
    const dir = await mkdtemp(join(tmpdir(), 'hookbot-queue-retries-'));
    try {
      await writeFile(
        join(dir, 'default.yml'),
        `rules:\n  - name: q\n    on: [merge_request.update]\n    for: merge_requests\n    do: [ { queue: { statuses: [ci/test], depth: 2, retries: 4 } } ]\n`,
      );
      const problems = (await loadRules(dir)).problems.map(formatProblem).join('\n');
      expect(problems).toContain('retries is at most 3 builds again of a failed car');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    { name: 'closed', changes: { state: 'closed' }, why: 'the merge request is closed' },
    {
      name: 'work in progress',
      changes: { work_in_progress: true },
      why: 'the merge request is work in progress',
    },
  ])('plans nothing for a merge request that is $name', ({ changes, why }) => {
    expect(runAction({ queue: { statuses: ['ci/test'] } }, mergeRequest('mr-green', changes))).toEqual({
      skipped: why,
      blocks: true,
    });
  });

  it('queues a merge request that conflicts with its target: the queue finds the conflict and says which files', () => {
    const planned = runAction(
      { queue: { statuses: ['ci/test'] } },
      mergeRequest('mr-green', { merge_status: 'cannot_be_merged' }),
    );
    expect(Array.isArray(planned) && planned.length).toBe(1);
  });

  it('is refused by check without statuses, with an empty list or a bad queue name', () => {
    for (const params of ['{}', '{ statuses: [] }', '{ statuses: [ci/test], name: "a b" }'])
      expect(() =>
        rulesFrom(`rules:\n  - name: q\n    on: [merge_request.update]\n    do: [ { queue: ${params} } ]\n`),
      ).toThrow();
  });
});

describe('queue action: rule problems', () => {
  it('refuses a queue rule that also requires statuses: it would leave the queue at each update', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hookbot-queue-rules-'));
    try {
      await writeFile(
        join(dir, 'default.yml'),
        [
          'rules:',
          '  - name: queue green',
          '    on: [merge_request.update]',
          '    if: [ { statuses: { required: [ci/test], state: success } } ]',
          '    do: [ { queue: { statuses: [ci/test] } } ]',
          '',
        ].join('\n'),
      );
      const loaded = await loadRules(dir);
      expect(loaded.problems.map(formatProblem)).toEqual([
        `${join(dir, 'default.yml')}:5:11: rule "queue green" queues with a statuses condition: each time the queue pushes an updated head its statuses are pending, the rule stops matching and the merge request leaves the queue (drop the statuses condition and name the statuses in the action: queue: { statuses: [ci/test] })`,
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // Issue 37: accepted, then ignored by the train (it lands by a fast-forward push, not a merge).
  it('refuses message and remove_source_branch: true on a merge train, at the option; keeps them on a serial queue', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hookbot-queue-train-options-'));
    try {
      await writeFile(
        join(dir, 'default.yml'),
        [
          'rules:',
          '  - name: train',
          '    on: [merge_request.update]',
          '    for: merge_requests',
          '    do:',
          '      - queue:',
          '          statuses: [ci/test]',
          '          depth: 3',
          '          remove_source_branch: true',
          "          message: 'Merge !{{ iid }}'",
          '  - name: batched',
          '    on: [merge_request.update]',
          '    for: merge_requests',
          '    do: [ { queue: { statuses: [ci/test], name: docs, batch: 2, remove_source_branch: false } } ]',
          '  - name: serial',
          '    on: [merge_request.update]',
          '    for: merge_requests',
          "    do: [ { queue: { statuses: [ci/test], name: slow, remove_source_branch: true, message: 'M' } } ]",
          '',
        ].join('\n'),
      );
      const file = join(dir, 'default.yml');
      const train = `queue "default" of rule "train" is a merge train (depth 3, batch 1), which lands by a fast-forward push of the target branch, not through the server's merge`;
      expect((await loadRules(dir)).problems.map(formatProblem)).toEqual([
        `${file}:9:11: "remove_source_branch" does not apply: ${train}, and the bot deletes no member's source branch (remove remove_source_branch, or make the queue serial (depth: 1, batch: 1) to have the merge delete it)`,
        `${file}:10:11: "message" does not apply: ${train}, so no merge commit is made to carry it (remove message, or make the queue serial (depth: 1, batch: 1) to merge with it)`,
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
