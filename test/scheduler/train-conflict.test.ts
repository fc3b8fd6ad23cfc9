/**
 * A merge request whose changes conflict with the cars ahead of it (src/git/train-git.ts `buildCar`:
 * the merges are made at once from the cache, and `git merge-tree` answers 1 both for a conflict and
 * for a commit it cannot find, told apart by the tree it writes). Against the sandbox over HTTP with
 * real git and its CI: the conflicting one leaves with one comment naming the file, the others land;
 * a car whose base the cache lacks (the target moved under the train) is still built.
 */
import { describe, expect, it } from 'vitest';
import { commitFile, masterLine, openMergeRequest } from '../helpers/queue-world.ts';
import { botNotes, queueAll, stateOf, trainRules, trainSuite } from '../helpers/train-suite.ts';

describe('a merge train and textual conflicts', { timeout: 240_000 }, () => {
  const suite = trainSuite('tcf');

  it('the second of two merge requests changing the same line leaves with one comment naming the file; the others land', async () => {
    const w = await suite.world(trainRules('depth: 3'));
    const a = await openMergeRequest(w, 'a', { 'shared.txt': 'one\nTWO from a\nthree\n' });
    const b = await openMergeRequest(w, 'b', { 'shared.txt': 'one\ntwo from b\nthree\n' });
    const c = await openMergeRequest(w, 'c', { 'c.txt': 'calls: foo\n' });
    await queueAll(w, [a.id, b.id, c.id]);
    await w.drive(() => w.active() === 0, 'the train empties');
    expect(await stateOf(w, a.id)).toBe('merged');
    expect(await stateOf(w, b.id)).toBe('opened');
    expect(await stateOf(w, c.id)).toBe('merged');
    const notes = await botNotes(w, b.id);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('conflicts with master');
    expect(notes[0]).toContain('`shared.txt`');
    expect((await masterLine(w)).every((x) => x.passes)).toBe(true);
  });

  it('the target moved under the train to a commit the cache has never seen: the cars are built on it all the same', async () => {
    const w = await suite.world(trainRules('depth: 3'));
    const a = await openMergeRequest(w, 'a', { 'a.txt': 'calls: foo\n' });
    const b = await openMergeRequest(w, 'b', { 'b.txt': 'calls: foo\n' });
    await w.ci.idle();
    for (const mr of [a, b]) await w.processItem(mr.id);
    await w.sweeps.run('merge_queue');
    expect((await commitFile(w, 'master', 'other.txt', 'calls: foo\n', { message: 'elsewhere' })).ok).toBe(
      true,
    );
    const moved = (await w.admin.branches.get(w.project.id, 'master')).commit.id;
    await w.drive(() => w.active() === 0, 'the train empties');
    for (const mr of [a, b])
      expect((await w.admin.mergeRequests.get(w.project.id, mr.id)).state).toBe('merged');
    const line = await masterLine(w);
    expect(line.map((x) => x.sha)).toContain(moved);
    expect(line.every((x) => x.passes)).toBe(true);
  });
});
