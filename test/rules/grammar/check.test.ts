import { describe, expect, it } from 'vitest';
import { checkRules, formatProblems } from '../../../src/rules/grammar/check.ts';

const dir = (name: string) => `test/fixtures/rules/${name}`;

describe('checkRules', () => {
  it.each(['example', 'projects'])('finds nothing wrong in the %s folder', async (name) => {
    expect(await checkRules(dir(name))).toEqual([]);
  });

  it('reports every problem of invalid files at once, with positions and hints', async () => {
    expect(formatProblems(await checkRules(dir('broken'))).split('\n')).toEqual([
      'test/fixtures/rules/broken/acme/web.yml:1:11: extends "../defaults.yml": no such rules file (test/fixtures/rules/broken/defaults.yml) (did you mean "../default.yml"?)',
      'test/fixtures/rules/broken/acme/web.yml:1:28: extends "../../outside.yml" points outside the rules folder',
      'test/fixtures/rules/broken/acme/web.yml:5:22: unknown key "sha" (expected one of remove_source_branch, message, authors)',
      'test/fixtures/rules/broken/acme/web.yml:6:5: unknown rule key "allow_bots" (did you mean "allow_bot"?)',
      'test/fixtures/rules/broken/default.yml:3:10: "on" must be one of issue.open, issue.update, issue.close, issue.reopen, issue.*, merge_request.open, merge_request.update, merge_request.close, merge_request.reopen, merge_request.merge, merge_request.*, note.created, status.changed, push, got the text "issue.opne" (did you mean "issue.open"?)',
      'test/fixtures/rules/broken/default.yml:5:9: unknown condition "titel" (did you mean "title"?)',
      'test/fixtures/rules/broken/default.yml:6:27: regular expression /(a)\\1/ uses a backreference (\\1), which the linear-time engine cannot run (match the text itself, or test it with a second condition)',
      'test/fixtures/rules/broken/default.yml:7:27: invalid regular expression /(unclosed/: Unterminated group',
      'test/fixtures/rules/broken/default.yml:8:16: "state" must be one of opened, closed, merged, reopened, locked, got the text "open" (did you mean "opened"?)',
      'test/fixtures/rules/broken/default.yml:9:24: "any" must not be an empty list',
      'test/fixtures/rules/broken/default.yml:10:32: invalid duration: write a number and a unit, e.g. 60d, 2h, 30m, 1w or 1d12h (m is minutes)',
      'test/fixtures/rules/broken/default.yml:12:9: unknown action "coment" (did you mean "comment"?)',
      'test/fixtures/rules/broken/default.yml:13:9: unknown action "clse" (did you mean "close"?)',
      'test/fixtures/rules/broken/default.yml:14:39: label "bug" is both added and removed by this action',
      'test/fixtures/rules/broken/default.yml:15:5: a rule needs "on" (events) or "schedule"',
      'test/fixtures/rules/broken/default.yml:18:15: invalid schedule "dayly" (did you mean "daily"?)',
      'test/fixtures/rules/broken/default.yml:19:10: "for" must be one of issues, merge_requests, got the text "issue" (did you mean "issues"?)',
    ]);
  });

  it('reports an extends cycle once, where it closes', async () => {
    expect(formatProblems(await checkRules(dir('cycle')))).toBe(
      'test/fixtures/rules/cycle/lib/parts/two.yml:1:11: extends cycle: lib/parts/one.yml -> lib/parts/two.yml -> lib/parts/one.yml',
    );
  });

  it('reports what only shows in the set a project gets', async () => {
    expect(formatProblems(await checkRules(dir('conflicts'))).split('\n')).toEqual([
      'test/fixtures/rules/conflicts/acme/web.yml:3:11: duplicate rule name "stale" (first defined at test/fixtures/rules/conflicts/default.yml:2:5) (rule names must be unique in the rules a project gets)',
      'test/fixtures/rules/conflicts/acme/web.yml:9:10: rule "unsafe merge" merges without a statuses condition with state success: the merge would never be planned (add - statuses: { required: [ci/build], state: success })',
      'test/fixtures/rules/conflicts/acme/web.yml:9:17: rule "unsafe merge" arms merge_when_build_succeeds without a statuses condition with state pending: it would never be planned (add - statuses: { required: [ci/build], state: pending })',
      'test/fixtures/rules/conflicts/acme/web.yml:13:9: condition "work_in_progress" is about merge requests, but rule "issues only" only runs on issues: it can never hold',
      'test/fixtures/rules/conflicts/acme/web.yml:14:16: condition "source_branch" is about merge requests, but rule "issues only" only runs on issues: it can never hold',
      'test/fixtures/rules/conflicts/acme/web.yml:15:10: action "cancel_merge" acts on merge requests, but rule "issues only" only runs on issues: it would never act',
      'test/fixtures/rules/conflicts/default.yml:5:31: label "stale" is toggled by rule "stale" and removed by rule "fresh" (test/fixtures/rules/conflicts/default.yml:8:31): they would flip it back and forth (toggle a label from one rule only)',
      'test/fixtures/rules/conflicts/default.yml:12:31: rule "flip-flop" toggles label "triaged" but requires it to be absent: it would add it, stop matching and remove it again (use label: { add: [...] } instead)',
    ]);
  });

  it('reports duplicate rule names within a file and across a file and the one it extends', async () => {
    expect(formatProblems(await checkRules(dir('duplicates'))).split('\n')).toEqual([
      'test/fixtures/rules/duplicates/acme/web.yml:6:11: duplicate rule name "close stale" (first defined at test/fixtures/rules/duplicates/default.yml:5:5) (rule names must be unique in the rules a project gets)',
      'test/fixtures/rules/duplicates/default.yml:9:11: duplicate rule name "triage" (first defined at test/fixtures/rules/duplicates/default.yml:2:5) (rule names must be unique in the rules a project gets)',
    ]);
  });

  it('reports files that define no rules (empty, comments only), not those with rules: [] or extends', async () => {
    expect(formatProblems(await checkRules(dir('no-rules'))).split('\n')).toEqual([
      'test/fixtures/rules/no-rules/acme/api.yml:1:1: no rules: the file defines no `rules:` list (write `rules: []` to mean none on purpose)',
      'test/fixtures/rules/no-rules/default.yml:1:1: no rules: the file defines no `rules:` list (write `rules: []` to mean none on purpose)',
    ]);
  });

  it('reports a missing folder', async () => {
    expect(formatProblems(await checkRules(dir('absent')))).toBe(
      'test/fixtures/rules/absent:1:1: rules folder not found',
    );
  });
});
