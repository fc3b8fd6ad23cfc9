/**
 * Rules that feed one queue (docs/merge-queue.md#rules-that-feed-one-queue): `depth` and `batch` are
 * the queue's shape, and the queue runs with the smallest of its entries, so `hookbot check` (the
 * loader's problems: the bot refuses what it reports) reports two rules of a project's set whose
 * `queue` actions name one queue with a different depth or batch, at the later action, naming the
 * earlier one, with every other problem of the files.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkRules, formatProblems } from '../../../src/rules/grammar/check.ts';
import { loadRules } from '../../../src/rules/grammar/load.ts';

const temp = mkdtempSync(path.join(tmpdir(), 'hookbot-queue-shapes-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** A rules folder written for one test: file name to text. */
function folder(name: string, files: Record<string, string>): string {
  const dir = path.join(temp, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

/** A rule that queues merge requests carrying `label`, with the queue's options as written. */
const queueRule = (name: string, label: string, queue: string): string => `  - name: ${name}
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - labels: { any: [${label}] }
    do:
      - queue: ${queue}
`;

const MESSAGE =
  ': the queue would run with the smallest depth and the smallest batch of the merge requests in it';
const HINT =
  ' (give both queue actions the same depth and batch, or name different queues (queue: { name: ... }))';

describe('rules that feed one queue with a different shape', () => {
  it('two rules of a file: the problem at the later action, naming the earlier one; the loader refuses it', async () => {
    const dir = folder('two-rules', {
      'default.yml': `rules:\n${queueRule('docs', 'docs', '{ statuses: [ci/test] }')}${queueRule(
        'code',
        'code',
        '{ statuses: [ci/test, review/approved], depth: 3 }',
      )}`,
    });
    const file = path.join(dir, 'default.yml');
    expect(formatProblems(await checkRules(dir))).toBe(
      `${file}:15:9: queue "default" is fed by rule "code" with depth 3, batch 1 and by rule "docs" (${file}:8:9) with depth 1, batch 1${MESSAGE}${HINT}`,
    );
    expect((await loadRules(dir)).problems).toHaveLength(1);
  });

  it('across a project file and the default it extends: in the project file, once; batch counts too', async () => {
    const dir = folder('extends', {
      'default.yml': `rules:\n${queueRule('docs', 'docs', '{ statuses: [ci/test], name: main }')}`,
      'acme/web.yml': `extends: [../default.yml]\nrules:\n${queueRule(
        'web',
        'web',
        '{ statuses: [ci/test], name: main, batch: 4 }',
      )}`,
    });
    const web = path.join(dir, 'acme/web.yml');
    expect(formatProblems(await checkRules(dir))).toBe(
      `${web}:9:9: queue "main" is fed by rule "web" with depth 1, batch 4 and by rule "docs" (${path.join(dir, 'default.yml')}:8:9) with depth 1, batch 1${MESSAGE}${HINT}`,
    );
  });

  it('the same shape written or left to its default, or different queues: no problem', async () => {
    const dir = folder('agree', {
      'default.yml': `rules:\n${[
        queueRule('a', 'a', '{ statuses: [ci/test] }'),
        queueRule('b', 'b', '{ statuses: [ci/lint], depth: 1, batch: 1, max_updates: 5 }'),
        queueRule('c', 'c', '{ statuses: [ci/test], name: trains, depth: 4, batch: 2 }'),
        queueRule(
          'd',
          'd',
          '{ statuses: [ci/test, review/ok], name: trains, depth: 4, batch: 2, priority_labels: [urgent] }',
        ),
      ].join('')}`,
    });
    expect(await checkRules(dir)).toEqual([]);
  });

  it('each later rule that disagrees, against the first of its queue, with every other problem of the file', async () => {
    const dir = folder('with-others', {
      'default.yml': `rules:\n${[
        queueRule('a', 'a', '{ statuses: [ci/test], depth: 2 }'),
        queueRule('a', 'b', '{ statuses: [ci/test], depth: 2 }'),
        queueRule('c', 'c', '{ statuses: [ci/test] }'),
        queueRule('d', 'd', '{ statuses: [ci/test], batch: 3 }'),
      ].join('')}  - name: unsafe
    on: [merge_request.update]
    do: [merge]
`,
    });
    const file = path.join(dir, 'default.yml');
    expect(formatProblems(await checkRules(dir)).split('\n')).toEqual([
      `${file}:9:11: duplicate rule name "a" (first defined at ${file}:2:5) (rule names must be unique in the rules a project gets)`,
      `${file}:22:9: queue "default" is fed by rule "c" with depth 1, batch 1 and by rule "a" (${file}:8:9) with depth 2, batch 1${MESSAGE}${HINT}`,
      `${file}:29:9: queue "default" is fed by rule "d" with depth 1, batch 3 and by rule "a" (${file}:8:9) with depth 2, batch 1${MESSAGE}${HINT}`,
      `${file}:32:10: rule "unsafe" merges without a statuses condition with state success: the merge would never be planned (add - statuses: { required: [ci/build], state: success })`,
    ]);
  });

  it('depth: auto beside a number, or two windows with other bounds: reported, saying which wins; the same window passes', async () => {
    const dir = folder('auto', {
      'default.yml': `rules:\n${[
        queueRule('docs', 'docs', '{ statuses: [ci/test], depth: 3 }'),
        queueRule('code', 'code', '{ statuses: [ci/test], depth: auto }'),
        queueRule('w1', 'w1', '{ statuses: [ci/test], name: windows, depth: auto }'),
        queueRule('w2', 'w2', '{ statuses: [ci/test], name: windows, depth: { min: 2, max: 10 } }'),
        queueRule('w3', 'w3', '{ statuses: [ci/test], name: windows, depth: { max: 6 } }'),
      ].join('')}`,
    });
    const file = path.join(dir, 'default.yml');
    expect(formatProblems(await checkRules(dir)).split('\n')).toEqual([
      `${file}:15:9: queue "default" is fed by rule "code" with depth auto (2..10), batch 1 and by rule "docs" (${file}:8:9) with depth 3, batch 1${MESSAGE} (a number wins over auto: the queue runs that number of cars, never more than the window's upper bound, and its depth does not follow the CI)${HINT}`,
      `${file}:36:9: queue "windows" is fed by rule "w3" with depth auto (2..6), batch 1 and by rule "w1" (${file}:22:9) with depth auto (2..10), batch 1${MESSAGE} (with every merge request asking auto, the window runs from the smallest lower bound to the smallest upper bound)${HINT}`,
    ]);
  });
});
