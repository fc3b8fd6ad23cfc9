import { describe, expect, it } from 'vitest';
import { parseRuleFile } from '../../../src/rules/grammar/parse-file.ts';
import { formatProblem } from '../../../src/rules/grammar/problem.ts';

const problems = (text: string): string[] => parseRuleFile(text, 'r.yml').problems.map(formatProblem);

describe('parseRuleFile', () => {
  it('accepts the readable grammar, with defaults filled in', () => {
    const parsed = parseRuleFile(
      [
        'rules:',
        '  - name: merge when green',
        '    on: [merge_request.update]',
        '    if:',
        '      - statuses: { required: [ci/build] }',
        '    do: [merge]',
      ].join('\n'),
      'r.yml',
    );
    expect(parsed.problems).toEqual([]);
    expect(parsed.spec).toEqual({
      rules: [
        {
          name: 'merge when green',
          on: ['merge_request.update'],
          if: [{ statuses: { required: ['ci/build'], state: 'success' } }],
          do: ['merge'],
        },
      ],
    });
  });

  it.each([
    { name: 'an empty file has no rules', text: '', expected: [] },
    { name: 'a comment-only file has no rules', text: '# nothing yet\n', expected: [] },
    {
      name: 'a list instead of a mapping',
      text: '- a\n',
      expected: ['r.yml:1:1: the file must be a mapping, got a list'],
    },
    {
      name: 'a YAML syntax error',
      text: 'rules: [\n',
      expected: [
        'r.yml:2:1: YAML: Flow sequence in block collection must be sufficiently indented and end with a ]',
      ],
    },
    {
      name: 'a key written twice',
      text: 'rules: []\nrules: []\n',
      expected: ['r.yml:2:1: YAML: Map keys must be unique'],
    },
    {
      name: 'two conditions in one list item',
      text: 'rules:\n  - name: a\n    on: [push]\n    if:\n      - { state: opened, work_in_progress: false }\n    do: [close]\n',
      expected: [
        'r.yml:5:9: one condition per list item, found 2: state, work_in_progress; write each as its own "- " item',
      ],
    },
    {
      name: 'a missing name and an empty action',
      text: 'rules:\n  - on: [push]\n    do: [{}]\n',
      expected: ['r.yml:2:5: missing "name"', 'r.yml:3:10: empty action'],
    },
    {
      name: 'an unknown placeholder, with the known ones',
      text: 'rules:\n  - name: a\n    on: [push]\n    do: [ { comment: "{{ autor }}" } ]\n',
      expected: [
        'r.yml:4:22: unknown placeholder "{{ autor }}" (known: title, description, state, id, iid, labels, milestone, author.username, author.id, assignee.username, project.path_with_namespace, project.id, source_branch, target_branch, sha, upvotes, downvotes, actor.username, event)',
      ],
    },
    {
      name: 'a wrong type for a condition',
      text: 'rules:\n  - name: a\n    on: [push]\n    if: [ { upvotes: "two" } ]\n    do: [close]\n',
      expected: ['r.yml:4:22: "upvotes" must be a number or a mapping, got the text "two"'],
    },
    {
      name: 'an unknown key inside a nested condition',
      text: 'rules:\n  - name: a\n    on: [push]\n    if:\n      - not: { any: [ { labels: { anny: [x] } } ] }\n    do: [close]\n',
      expected: ['r.yml:5:35: unknown key "anny" (did you mean "any"?)'],
    },
    {
      name: 'a label with a comma',
      text: 'rules:\n  - name: a\n    on: [push]\n    do: [ { label: { add: ["a,b"] } } ]\n',
      expected: ['r.yml:4:28: a label name cannot contain a comma (the v3 API separates labels with commas)'],
    },
    {
      name: 'an unsupported inline flag',
      text: "rules:\n  - name: a\n    on: [push]\n    if: [ { title: { matches: '(?x)a' } } ]\n    do: [close]\n",
      expected: ['r.yml:4:31: unsupported inline flag "x" in /(?x)a/ (use (?i), (?m) or (?s))'],
    },
  ])('$name', ({ text, expected }) => {
    expect(problems(text)).toEqual(expected);
  });

  it('suggests the closest placeholder', () => {
    const text = 'rules:\n  - name: a\n    on: [push]\n    do: [ { comment: "Hi {{ author.usrname }}" } ]\n';
    expect(problems(text)).toEqual([
      'r.yml:4:22: unknown placeholder "{{ author.usrname }}" (did you mean "author.username"?)',
    ]);
  });

  it('refuses too long regular expressions', () => {
    const text = `rules:\n  - name: a\n    on: [push]\n    if: [ { title: { matches: '${'a'.repeat(501)}' } } ]\n    do: [close]\n`;
    expect(problems(text)).toEqual([
      'r.yml:4:31: regular expression is too long (501 characters, at most 500)',
    ]);
  });

  it('stops alias expansion bombs', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i++)
      lines.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(', ')}]`,
      );
    const [problem] = parseRuleFile(lines.join('\n'), 'bomb.yml').problems;
    expect(problem?.message).toMatch(/^YAML: .*alias/i);
  });
});
