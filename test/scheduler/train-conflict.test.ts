/**
 * A merge request whose changes conflict with the cars ahead of it (src/git/train-git.ts `buildCar`:
 * the merges are made at once from the cache, and `git merge-tree` answers 1 both for a conflict and
 * for a commit it cannot find, told apart by the tree it writes). Against the sandbox over HTTP with
 * real git and its CI: the conflicting one leaves with one comment naming the file, the others land;
 * a car whose base the cache lacks (the target moved under the train) is still built.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { commitFile, makeQueueWorld, masterLine, openMergeRequest } from '../helpers/queue-world.ts';

const RULES = `
rules:
  - name: queue automerge
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if: [ { state: opened }, { labels: { any: [automerge] } } ]
    do:
      - queue: { statuses: [ci/test], status_timeout: 10m, depth: 3 }
`;

describe('a merge train and textual conflicts', { timeout: 240_000 }, () => {
  let sb: Sandbox;
  let dir = '';
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    sb = await startSandbox({ adminToken: 'tcf-root-token', hookTimeoutMs: 2_000 });
    dir = await mkdtemp(path.join(tmpdir(), 'hookbot-tcf-'));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(async () => {
    await sb?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the second of two merge requests changing the same line leaves with one comment naming the file; the others land', async () => {
    const w = await makeQueueWorld(sb, { prefix: 'tcf1', rules: RULES, workDir: dir });
    cleanups.push(() => w.close());
    const a = await openMergeRequest(w, 'a', { 'shared.txt': 'one\nTWO from a\nthree\n' });
    const b = await openMergeRequest(w, 'b', { 'shared.txt': 'one\ntwo from b\nthree\n' });
    const c = await openMergeRequest(w, 'c', { 'c.txt': 'calls: foo\n' });
    await w.ci.idle();
    for (const mr of [a, b, c]) await w.processItem(mr.id);
    await w.drive(() => w.active() === 0, 'the train empties');
    const state = async (id: number) => (await w.admin.mergeRequests.get(w.project.id, id)).state;
    expect(await state(a.id)).toBe('merged');
    expect(await state(b.id)).toBe('opened');
    expect(await state(c.id)).toBe('merged');
    const notes: string[] = [];
    for await (const note of w.admin.notes.listMergeRequestNotes(w.project.id, b.id))
      if (!note.system && note.author.username.endsWith('-bot')) notes.push(note.body);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('conflicts with master');
    expect(notes[0]).toContain('`shared.txt`');
    expect((await masterLine(w)).every((x) => x.passes)).toBe(true);
  });

  it('the target moved under the train to a commit the cache has never seen: the cars are built on it all the same', async () => {
    const w = await makeQueueWorld(sb, { prefix: 'tcf2', rules: RULES, workDir: dir });
    cleanups.push(() => w.close());
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
