/**
 * The merge queues a repository's `.hookbot.yml` may feed (docs/repository-rules.md#queues): within
 * the operator's limits (`rules.repository.queue.max_depth`, `max_batch`, serial by default), and
 * never a queue the central rules of the project feed. Each is a problem of the file at the
 * parameter, with the key to raise or what to write instead; a file with one gives no rules.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_BATCH, MAX_DEPTH } from '../../../src/rules/actions/queue.ts';
import { compileRules } from '../../../src/rules/engine/compile.ts';
import { repositoryPolicy } from '../../../src/rules/repository/allow-list.ts';
import { keptBeside } from '../../../src/rules/repository/queues.ts';
import { checkRepositoryFile } from '../../../src/rules/repository/repository-file.ts';
import { loadConfig } from '../../../src/config/load-config.ts';

const short = (problems: { line: number; column: number; message: string; hint?: string }[]) =>
  problems.map((p) => `${p.line}:${p.column}: ${p.message}${p.hint ? ` (${p.hint})` : ''}`);

/** A repository rule that queues merge requests labelled `label`, the queue's options as written. */
const queueRule = (name: string, queue: string): string => `  - name: ${name}
    on: [merge_request.open, merge_request.update]
    for: merge_requests
    if:
      - labels: { any: [${name}] }
    do:
      - queue: ${queue}
`;

const file = (...rules: string[]) => `rules:\n${rules.join('')}`;

/** The operator's rules for the project: one feeding the default queue, one feeding `main`. */
const central = compileRules([
  {
    file: 'rules/acme/web.yml',
    rules: [
      { name: 'ship', on: ['merge_request.update'], do: [{ queue: { statuses: ['ci/test'] } }] },
      {
        name: 'release',
        on: ['merge_request.update'],
        do: [{ queue: { statuses: ['ci/test'], name: 'main', depth: 4 } }],
      },
    ] as never,
    sources: [
      { file: 'rules/acme/web.yml', line: 2, column: 5 },
      { file: 'rules/acme/web.yml', line: 7, column: 5 },
    ],
  },
]).rules;

describe('queue limits of repository rules', () => {
  it('serial by default: a depth or batch over 1 is a problem at that parameter, naming the key to raise', () => {
    const checked = checkRepositoryFile(
      file(queueRule('train', '{ statuses: [ci/test], depth: 5, batch: 2 }')),
      {
        file: '.hookbot.yml',
        policy: repositoryPolicy(['queue']),
      },
    );
    expect(short(checked.problems)).toEqual([
      `8:46: queue depth 5 is over the 1 the operator allows repository rules (rule "train"): depth is how many cars of a merge train tested at once, and the operator, who knows the CI's capacity, sets how large a repository's trains may be (write depth: 1 or less, or ask the operator to raise rules.repository.queue.max_depth (at most 20))`,
      `8:56: queue batch 2 is over the 1 the operator allows repository rules (rule "train"): batch is how many merge requests per car, and the operator, who knows the CI's capacity, sets how large a repository's trains may be (write batch: 1 or less, or ask the operator to raise rules.repository.queue.max_batch (at most 10))`,
    ]);
    expect(checked.rules).toBeUndefined();
  });

  it("within what the operator raised them to: taken; at the action's own maximum the hint raises nothing", () => {
    const text = file(queueRule('train', '{ statuses: [ci/test], depth: 5, batch: 2 }'));
    const raised = repositoryPolicy(['queue'], { maxDepth: 5, maxBatch: 2 });
    const checked = checkRepositoryFile(text, { file: '.hookbot.yml', policy: raised });
    expect(checked.problems).toEqual([]);
    expect(checked.rules?.map((rule) => rule.name)).toEqual(['train']);
    const lowered = checkRepositoryFile(text, {
      file: '.hookbot.yml',
      policy: repositoryPolicy(['queue'], { maxDepth: 4, maxBatch: 2 }),
    });
    expect(short(lowered.problems)).toEqual([
      expect.stringContaining('rules.repository.queue.max_depth (at most 20)'),
    ]);
    // The action refuses a depth over 20 itself: at the maximum, the hint is only to lower it.
    const atMost = checkRepositoryFile(file(queueRule('train', '{ statuses: [ci/test], batch: 10 }')), {
      file: '.hookbot.yml',
      policy: repositoryPolicy(['queue'], { maxDepth: 1, maxBatch: 10 }),
    });
    expect(atMost.problems).toEqual([]);
  });

  it('depth: auto counts by its upper bound (10 unless written): over the limit, the hint writes the bound', () => {
    const policy = repositoryPolicy(['queue'], { maxDepth: 4, maxBatch: 1 });
    const auto = checkRepositoryFile(file(queueRule('train', '{ statuses: [ci/test], depth: auto }')), {
      file: '.hookbot.yml',
      policy,
    });
    expect(short(auto.problems)).toEqual([
      `8:46: queue depth auto (2..10) is over the 4 the operator allows repository rules (rule "train"): depth is how many cars of a merge train tested at once, and the operator, who knows the CI's capacity, sets how large a repository's trains may be (write depth: { max: 4 } (an auto window up to 4) or a number up to 4, or ask the operator to raise rules.repository.queue.max_depth (at most 20))`,
    ]);
    const bounded = checkRepositoryFile(
      file(queueRule('train', '{ statuses: [ci/test], depth: { max: 4 } }')),
      { file: '.hookbot.yml', policy },
    );
    expect(bounded.problems).toEqual([]);
  });

  it('a queue the operator has not allowed: the allow-list problem alone', () => {
    const checked = checkRepositoryFile(file(queueRule('train', '{ statuses: [ci/test], depth: 5 }')), {
      file: '.hookbot.yml',
      policy: repositoryPolicy([]),
    });
    expect(short(checked.problems)).toEqual([
      `8:9: action "queue" is not allowed in repository rules (rule "train"): it needs the operator's permission (ask the operator to add queue to rules.repository.allow, or to move the rule to the central rules)`,
    ]);
  });

  it("the configuration keys default to 1 and stop at the action's own limits", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookbot-queue-limits-'));
    try {
      const load = (queue: string) => {
        const config = path.join(dir, 'config.yml');
        writeFileSync(config, `rules:\n  repository:\n    queue: ${queue}\n`);
        return loadConfig({ file: config, env: {}, cwd: dir, inDocker: false });
      };
      const defaults = load('{}');
      expect(defaults.ok && defaults.config.rules.repository.queue).toEqual({ max_depth: 1, max_batch: 1 });
      expect(load(`{ max_depth: ${MAX_DEPTH}, max_batch: ${MAX_BATCH} }`).ok).toBe(true);
      for (const over of [
        `{ max_depth: ${MAX_DEPTH + 1} }`,
        `{ max_batch: ${MAX_BATCH + 1} }`,
        '{ max_depth: 0 }',
      ])
        expect(load(over).ok, over).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a repository rule never joins the central rules' queues", () => {
  const policy = repositoryPolicy(['queue'], { maxDepth: 4, maxBatch: 1 });

  it('the default queue the operator feeds: at the action, naming the central rule and what to do', () => {
    const checked = checkRepositoryFile(file(queueRule('mine', '{ statuses: [ci/test] }')), {
      file: '.hookbot.yml',
      policy,
      central,
    });
    expect(short(checked.problems)).toEqual([
      `8:9: queue "default" is fed by the operator's rule "ship" (rules/acme/web.yml:2:5) (rule "mine"): a repository rule may not join a queue of the central rules (its depth and batch would reshape their queue, and its merge requests would ride with theirs) (name another queue, one the central rules do not feed: queue: { name: <another name>, ... })`,
    ]);
    expect(checked.rules).toBeUndefined();
  });

  it('a named one, even with the same shape: at its name; another name is taken', () => {
    const joins = checkRepositoryFile(
      file(queueRule('mine', '{ statuses: [ci/test], name: main, depth: 4 }')),
      {
        file: '.hookbot.yml',
        policy,
        central,
      },
    );
    expect(short(joins.problems)).toEqual([
      expect.stringMatching(
        /^8:45: queue "main" is fed by the operator's rule "release" \(rules\/acme\/web\.yml:7:5\) \(rule "mine"\)/,
      ),
    ]);
    const own = checkRepositoryFile(
      file(queueRule('mine', '{ statuses: [ci/test], name: team, depth: 4 }')),
      {
        file: '.hookbot.yml',
        policy,
        central,
      },
    );
    expect(own.problems).toEqual([]);
  });

  it('two repository rules that feed one queue with different shapes: the check of every rule set', () => {
    const checked = checkRepositoryFile(
      file(
        queueRule('docs', '{ statuses: [ci/test], name: team }'),
        queueRule('code', '{ statuses: [ci/test], name: team, depth: 3 }'),
      ),
      { file: '.hookbot.yml', policy, central },
    );
    expect(short(checked.problems)).toEqual([
      '15:9: queue "team" is fed by rule "code" with depth 3, batch 1 and by rule "docs" (.hookbot.yml:8:9) with depth 1, batch 1: the queue would run with the smallest depth and the smallest batch of the merge requests in it (give both queue actions the same depth and batch, or name different queues (queue: { name: ... }))',
    ]);
  });

  it('a file taken before the central rules fed its queue: the rule is left out at once (a name likewise)', () => {
    const taken = checkRepositoryFile(
      file(
        queueRule('mine', '{ statuses: [ci/test] }'),
        queueRule('team', '{ statuses: [ci/test], name: team }'),
      ),
      { file: '.hookbot.yml', policy, central: [] },
    ).rules!;
    expect(taken.filter(keptBeside([])).map((rule) => rule.name)).toEqual(['mine', 'team']);
    expect(taken.filter(keptBeside(central)).map((rule) => rule.name)).toEqual(['team']);
    const named = compileRules([{ rules: [{ name: 'team', on: ['issue.open'], do: ['close'] }] as never }]);
    expect(taken.filter(keptBeside(named.rules)).map((rule) => rule.name)).toEqual(['mine']);
  });
});
