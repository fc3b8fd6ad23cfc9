/**
 * A repository's `.hookbot.yml` is checked with the grammar of the rules folder: every file of the
 * bad-rules corpus gets the very problems `hookbot check` reports for it, plus what only a
 * repository file can get wrong (extends, the operator's allow-list, moves out of the namespace,
 * names the central rules use). A file with any problem gives no rules at all.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { actionDefinitions } from '../../../src/rules/actions/index.ts';
import { compileRules, ruleSet } from '../../../src/rules/engine/compile.ts';
import { evaluate } from '../../../src/rules/engine/engine.ts';
import { checkRules } from '../../../src/rules/grammar/check.ts';
import { MAX_RULE_FILE_BYTES } from '../../../src/rules/grammar/parse-file.ts';
import {
  DEFAULT_REPOSITORY_ACTIONS,
  OPERATOR_ACTIONS,
  repositoryPolicy,
} from '../../../src/rules/repository/allow-list.ts';
import { checkRepositoryFile } from '../../../src/rules/repository/repository-file.ts';
import { issue, mergeRequest, NOW, rulesFrom } from '../support.ts';

const CORPUS = 'test/reliability/corpus/rules';
const temp = mkdtempSync(path.join(tmpdir(), 'hookbot-repository-file-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

const everything = repositoryPolicy(OPERATOR_ACTIONS);
const defaults = repositoryPolicy([]);
const short = (problems: { line: number; column: number; message: string; hint?: string }[]) =>
  problems.map((p) => `${p.line}:${p.column}: ${p.message}${p.hint ? ` (${p.hint})` : ''}`);

describe('a repository file: the problems of hookbot check', () => {
  const files = readdirSync(CORPUS).filter((name) => statSync(path.join(CORPUS, name)).isFile());

  it.each(files)('%s', async (name) => {
    const text = readFileSync(path.join(CORPUS, name), 'utf8');
    const dir = path.join(temp, name.replace(/\W/g, '-'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'default.yml'), text);
    const fromCheck = await checkRules(dir);
    const fromRepository = checkRepositoryFile(text, {
      file: path.join(dir, 'default.yml'),
      policy: everything,
    });
    expect(fromCheck.length).toBeGreaterThan(0);
    expect(short(fromRepository.problems)).toEqual(short(fromCheck));
    expect(fromRepository.rules).toBeUndefined();
  });

  it('a file over 256 KB: refused before it is parsed, by check and in a repository alike', async () => {
    const text = `rules: []\n${'#'.repeat(MAX_RULE_FILE_BYTES)}\n`;
    const dir = path.join(temp, 'large');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'default.yml'), text);
    const expected =
      '1:1: the file is 257 KB, over the 256 KB limit of a rule file (split it, or move what is not rules elsewhere)';
    expect(short(await checkRules(dir))).toEqual([expected]);
    expect(short(checkRepositoryFile(text, { file: '.hookbot.yml', policy: everything }).problems)).toEqual([
      expected,
    ]);
  });
});

describe('what only a repository file can get wrong', () => {
  it('the defaults come from the action registry: merges, the merge queue (dequeue too) and moves need the operator', () => {
    expect(DEFAULT_REPOSITORY_ACTIONS).toEqual(
      expect.arrayContaining(['label', 'comment', 'status', 'assign', 'close']),
    );
    // These must never become allowed by default; a new action may need the operator too (the safe
    // side: nothing to change here), and each says which it is (`inRepositories`).
    expect(
      OPERATOR_ACTIONS,
      'an action that needs the operator became allowed by default: its inRepositories in src/rules/actions/',
    ).toEqual(
      expect.arrayContaining([
        'cancel_merge',
        'dequeue',
        'merge',
        'merge_when_build_succeeds',
        'move',
        'queue',
      ]),
    );
    expect(DEFAULT_REPOSITORY_ACTIONS.length + OPERATOR_ACTIONS.length).toBe(actionDefinitions.length);
  });

  it('an action the operator has not allowed, at the action, with what to change', () => {
    const text = `rules:
  - name: ship
    on: [merge_request.update]
    if:
      - statuses: { required: [ci/build], state: success }
    do:
      - label: { add: [shipping] }
      - merge
`;
    const refused = checkRepositoryFile(text, { file: '.hookbot.yml', policy: defaults });
    expect(short(refused.problems)).toEqual([
      '8:9: action "merge" is not allowed in repository rules (rule "ship"): it needs the operator\'s permission (ask the operator to add merge to rules.repository.allow, or to move the rule to the central rules)',
    ]);
    expect(refused.rules).toBeUndefined();
    const allowed = checkRepositoryFile(text, { file: '.hookbot.yml', policy: repositoryPolicy(['merge']) });
    expect(allowed.problems).toEqual([]);
    expect(allowed.rules?.map((rule) => rule.name)).toEqual(['ship']);
  });

  it('a move stays in the namespace, even when moves are allowed', () => {
    const text = `rules:
  - name: to-support
    on: [issue.open]
    do:
      - move: { to: support/helpdesk }
  - name: to-sibling
    on: [issue.open]
    do:
      - move: { to: acme/helpdesk }
`;
    const checked = checkRepositoryFile(text, {
      file: '.hookbot.yml',
      policy: repositoryPolicy(['move']),
      project: 'acme/web',
    });
    expect(short(checked.problems)).toEqual([
      '5:9: move to "support/helpdesk" leaves the namespace acme (rule "to-support"): repository rules move issues only within their namespace (move to a project of acme/, or ask the operator to move the rule to the central rules)',
    ]);
  });

  it('extends, and a name the central rules use', () => {
    const central = compileRules([
      {
        file: 'rules/default.yml',
        rules: [{ name: 'triage', on: ['issue.open'], do: ['close'] }] as never,
        sources: [{ file: 'rules/default.yml', line: 2, column: 5 }],
      },
    ]).rules;
    const checked = checkRepositoryFile(
      `extends: [../default.yml]
rules:
  - name: triage
    on: [issue.open]
    do: [close]
`,
      { file: '.hookbot.yml', policy: defaults, central },
    );
    expect(short(checked.problems)).toEqual([
      "1:1: extends is not available in .hookbot.yml: the operator's rules for the project already come first (write the rules here, or ask the operator to add them to the central rules)",
      '3:11: rule name "triage" is taken by the operator\'s rules for this project (rules/default.yml:2:5) (give the rule another name)',
    ]);
  });

  it('an unknown action in the operator allow-list is refused with a did-you-mean', () => {
    expect(() => repositoryPolicy(['merg'])).toThrow(
      'rules.repository.allow: "merg" is not an action (did you mean "merge"?)',
    );
  });
});

describe("a repository file's rules act as a developer's, not the operator's", () => {
  it('a move it is allowed does not carry a confidential issue out of the project (the same rule centrally does)', () => {
    const text =
      'rules:\n  - name: hand over\n    on: [issue.open]\n    for: issues\n    do:\n      - move: { to: acme/helpdesk }\n';
    const checked = checkRepositoryFile(text, {
      file: 'acme/web:.hookbot.yml',
      policy: repositoryPolicy(['move']),
      project: 'acme/web',
    });
    expect(checked.problems).toEqual([]);
    const secret = issue('issue-open', {
      confidential: true,
      project: { id: 8, path_with_namespace: 'acme/web' },
    });
    const fromRepository = evaluate(ruleSet(checked.rules!), secret, { now: NOW });
    expect(fromRepository.plan).toEqual([]);
    expect(fromRepository.rules[0]!.actions![0]!.skipped).toContain(
      "a confidential issue is not moved by a project's own .hookbot.yml",
    );
    const central = evaluate(rulesFrom(text), secret, { now: NOW });
    expect(central.plan.map((call) => call.call.op)).toEqual(['issues.move']);
  });

  it("its statuses, the status action's and the summary's, go to the executor to be marked (the same rule centrally: not)", () => {
    const text = `rules:
  - name: self-approve
    on: [merge_request.update, status.changed]
    for: merge_requests
    summary_status: { name: review/approved }
    do:
      - status: { name: ci/test, state: success, description: 'all good' }
`;
    const checked = checkRepositoryFile(text, { file: 'acme/web:.hookbot.yml', policy: defaults });
    expect(checked.problems).toEqual([]);
    const mr = mergeRequest('mr-green', { statuses: [] });
    const fromRepository = evaluate(ruleSet(checked.rules!), mr, { now: NOW });
    expect(fromRepository.plan.map((call) => [call.call.op, call.call.args])).toEqual([
      [
        'statuses.create',
        expect.objectContaining({ name: 'ci/test', description: 'all good', repository: true }),
      ],
      [
        'statuses.create',
        expect.objectContaining({ name: 'review/approved', state: 'success', repository: true }),
      ],
    ]);
    const central = evaluate(rulesFrom(text), mr, { now: NOW });
    expect(central.plan.map((call) => call.call.args)).toEqual([
      expect.not.objectContaining({ repository: true }),
      expect.not.objectContaining({ repository: true }),
    ]);
  });
});
