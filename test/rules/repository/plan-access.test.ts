/**
 * What a plan's readers may read (plan-access.ts `audienceOf`), per the 8.x abilities: the project by
 * its visibility or membership, confidential issues by reporters and above, their author and their
 * assignee, merge requests (code and statuses) of a private project by reporters and above. The reads
 * of the access itself run over HTTP in test/adversarial/plan.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { audienceOf, readerText, type Reader } from '../../../src/rules/repository/plan-access.ts';

const PUBLIC = { visibility_level: 20 };
const PRIVATE = { visibility_level: 0 };
const user = (id: number, level: number): Reader => ({ id, username: `u${id}`, level });
const issue = (confidential: boolean | undefined, author = 100, assignee: number | null = null) => ({
  confidential,
  author: { id: author, username: 'a' },
  assignee: assignee === null ? null : { id: assignee, username: 'b' },
});

describe('what the readers of a plan may read', () => {
  it('a non-member of a public project: its issues and merge requests, no confidential issue', () => {
    const audience = audienceOf(PUBLIC, [user(1, 0)]);
    expect(audience.issues).toBe(true);
    expect(audience.mergeRequests).toBe(true);
    expect(audience.mayReadIssue(issue(false))).toBe(true);
    expect(audience.mayReadIssue(issue(true))).toBe(false);
  });

  it('a server that does not say (before 8.6) has no confidential issues', () => {
    expect(audienceOf(PUBLIC, [user(1, 0)]).mayReadIssue(issue(undefined))).toBe(true);
  });

  it('a confidential issue: reporters and above, its author, its assignee', () => {
    expect(audienceOf(PUBLIC, [user(1, 20)]).mayReadIssue(issue(true))).toBe(true);
    expect(audienceOf(PUBLIC, [user(1, 10)]).mayReadIssue(issue(true))).toBe(false);
    expect(audienceOf(PUBLIC, [user(1, 10)]).mayReadIssue(issue(true, 1))).toBe(true);
    expect(audienceOf(PUBLIC, [user(1, 0)]).mayReadIssue(issue(true, 100, 1))).toBe(true);
    // Anyone (a fork whose pushers are not known) has no id: neither author nor assignee.
    expect(audienceOf(PUBLIC, [{ level: 0 }]).mayReadIssue(issue(true, 100, 1))).toBe(false);
  });

  it('several readers: only what every one of them may read', () => {
    const both = audienceOf(PUBLIC, [user(1, 40), user(2, 0)]);
    expect(both.mayReadIssue(issue(true))).toBe(false);
    expect(both.mayReadIssue(issue(true, 2))).toBe(true);
    expect(both.mayReadIssue(issue(false))).toBe(true);
  });

  it('a private project: nothing for a non-member; issues but no merge requests for a guest', () => {
    const outsider = audienceOf(PRIVATE, [user(1, 0)]);
    expect(outsider.issues).toBe('@u1 (not a member) may not read the project');
    expect(outsider.mergeRequests).toBe('@u1 (not a member) may not read the project');
    expect(outsider.mayReadIssue(issue(false))).toBe(false);
    const guest = audienceOf(PRIVATE, [user(1, 10)]);
    expect(guest.issues).toBe(true);
    expect(guest.mergeRequests).toBe(
      '@u1 (guest) may not read the code and the commit statuses of this private project',
    );
    expect(audienceOf(PRIVATE, [user(1, 20)]).mergeRequests).toBe(true);
  });

  it('features turned off', () => {
    const audience = audienceOf({ ...PUBLIC, issues_enabled: false, merge_requests_enabled: false }, [
      user(1, 40),
    ]);
    expect(audience.issues).toBe('the project has no issues');
    expect(audience.mergeRequests).toBe('the project has no merge requests');
  });

  it('readers in words', () => {
    expect(readerText(user(3, 20))).toBe('@u3 (reporter)');
    expect(readerText({ id: 9, level: 50 })).toBe('user 9 (owner)');
    expect(readerText({ level: 0 })).toBe('anyone (not a member)');
  });
});
