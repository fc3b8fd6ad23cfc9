import { describe, expect, it } from 'vitest';
import { changeAfter } from '../../../src/rules/item/pushed-since-note.ts';

const system = (id: number, body: string, author = 'mallory') => ({
  id,
  system: true,
  body,
  author: { id: author === 'bot' ? 1 : 7, username: author },
});
const bot = { id: 1, username: 'bot' };

describe('what changed a merge request after a comment, from the server’s system notes', () => {
  it.each([
    ['8.x, one commit', 'Added 1 commit:\n\n* 1a2b3c4 - Fix the test'],
    ['8.x, several', 'Added 3 commits:\n\n* 1a2b3c4 - One\n* 2b3c4d5 - Two\n* 3c4d5e6 - Three'],
    ['8.x, a push that adds none (a reset to an older commit)', 'Added 0 commits:\n\n'],
    ['7.x', 'Added 2 new commits:\n\n* 1a2b3c4 - One\n* 2b3c4d5 - Two'],
    ['7.x, one', 'Added 1 new commit:\n\n* 1a2b3c4 - One'],
  ])('a push: %s', (_name, body) => {
    expect(changeAfter(system(12, body), 11, bot)).toBe('a push to its source branch');
  });

  it.each([
    // A push while it is closed leaves no note (the server refreshes open merge requests only).
    ['Status changed to closed', 'a close or reopen'],
    ['Status changed to reopened', 'a close or reopen'],
    ['Target branch changed from `staging` to `master`', 'a change of its target branch'],
    // The branch deleted and made again (the last 8.x releases write no `Added` note then).
    ['Deleted source branch `feature`', 'a deletion or restore of its source branch'],
    ['Restored source branch `feature`', 'a deletion or restore of its source branch'],
  ])('%s', (body, change) => {
    expect(changeAfter(system(12, body), 11, bot)).toBe(change);
  });

  it("the bot's own push (the queue bringing the branch up to its target) is no change of the author's", () => {
    expect(
      changeAfter(system(12, 'Added 1 commit:\n\n* 1a2b3c4 - Merge master', 'bot'), 11, bot),
    ).toBeUndefined();
    expect(changeAfter(system(12, 'Status changed to reopened', 'bot'), 11, bot)).toBe('a close or reopen');
  });

  it('counts only notes after the comment, written by the server, that say the code or the target changed', () => {
    expect(changeAfter(system(10, 'Added 1 commit:'), 11, bot)).toBeUndefined();
    expect(changeAfter(system(11, 'Added 1 commit:'), 11, bot)).toBeUndefined();
    // A person's comment cannot pose as the server's record of a push.
    expect(changeAfter({ id: 12, system: false, body: 'Added 1 commit:' }, 11, bot)).toBeUndefined();
    for (const body of [
      'changed the title from **a** to **b**',
      'mentioned in !3',
      'Reassigned to @alice',
      'I Added 1 commit: see above',
    ])
      expect(changeAfter(system(12, body), 11, bot)).toBeUndefined();
  });
});
