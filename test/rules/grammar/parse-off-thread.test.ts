/**
 * A repository's rule file is parsed on a worker thread (issue 28: never unbounded work on the
 * event loop that answers hooks): the calling thread never composes a YAML document, and what comes
 * back answers exactly as a parse on the calling thread would, positions included.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Composer, Parser } from 'yaml';
import { parseRuleFileOffThread } from '../../../src/rules/grammar/parse-off-thread.ts';
import { parseRuleFile } from '../../../src/rules/grammar/parse-file.ts';
import type { ValuePath } from '../../../src/rules/grammar/yaml-positions.ts';

const VALID = `# the rules of acme/web
rules:
  - name: triage
    on: [issue.open]
    for: issues
    if:
      - title: { matches: '(?i)crash' }
    do:
      - label: { add: [needs-triage] }
  - name: thanks
    on: [merge_request.open]
    do:
      - comment: "Thanks!"
      - label: { add: [review] }
`;

const BROKEN = `rules:
  - name: triage
    on: [issue.open]
    do: [close]
    colour: red
  - nme: x
`;

const paths: [ValuePath, string?][] = [
  [[]],
  [[], 'rules'],
  [['rules']],
  [['rules', 0]],
  [['rules', 0, 'name']],
  [['rules', 0, 'if', 0, 'title']],
  [['rules', 0, 'if', 0], 'title'],
  [['rules', 1, 'do', 1, 'label', 'add', 0]],
  [['rules', 1, 'do', 9]],
  [['rules', 1, 'nothing', 'here']],
  [['rules', '1', 'name']],
  [['rules', 1], 'do'],
  [['rules', 1], 'missing'],
];

describe('parseRuleFileOffThread', () => {
  afterEach(() => vi.restoreAllMocks());

  it('parses on a worker: this thread neither parses nor composes', async () => {
    const compose = vi.spyOn(Composer.prototype, 'compose');
    const parse = vi.spyOn(Parser.prototype, 'parse');
    const parsed = await parseRuleFileOffThread(VALID, 'acme/web:.hookbot.yml');
    expect(parsed.problems).toEqual([]);
    expect(parsed.spec?.rules.map((rule) => rule.name)).toEqual(['triage', 'thanks']);
    expect(compose).not.toHaveBeenCalled();
    expect(parse).not.toHaveBeenCalled();
  });

  it('answers as a parse here does: spec, problems and every position', async () => {
    for (const text of [VALID, BROKEN, '', 'rules: []\n']) {
      const here = parseRuleFile(text, 'f.yml');
      const there = await parseRuleFileOffThread(text, 'f.yml');
      expect(there.spec).toEqual(here.spec);
      expect(there.problems).toEqual(here.problems);
      expect(there.extends).toEqual(here.extends);
      if (here.spec)
        for (const [path, key] of paths)
          expect([path, key, there.locate(path, key)]).toEqual([path, key, here.locate(path, key)]);
    }
  });

  it('a hostile file comes back refused with its bound, one parse after the other', async () => {
    const bomb = `${Array.from({ length: 32_800 }, (_, i) => `${i.toString(36)}: 1`).join('\n')}\n`;
    const [refused, fine] = await Promise.all([
      parseRuleFileOffThread(bomb, 'f.yml'),
      parseRuleFileOffThread(VALID, 'f.yml'),
    ]);
    expect(refused.problems.map((problem) => problem.message)).toEqual([
      'more than 20,000 YAML tokens (keys, values, items), the limit of a rule file',
    ]);
    expect(fine.problems).toEqual([]);
  });
});
