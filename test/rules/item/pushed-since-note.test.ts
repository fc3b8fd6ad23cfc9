import { describe, expect, it } from 'vitest';
import { pushedAfter } from '../../../src/rules/item/pushed-since-note.ts';

const system = (id: number, body: string) => ({ id, system: true, body });

describe('a push after a comment, from the server’s system notes', () => {
  it.each([
    ['8.x, one commit', 'Added 1 commit:\n\n* 1a2b3c4 - Fix the test'],
    ['8.x, several', 'Added 3 commits:\n\n* 1a2b3c4 - One\n* 2b3c4d5 - Two\n* 3c4d5e6 - Three'],
    ['8.x, a push that adds none (a reset to an older commit)', 'Added 0 commits:\n\n'],
    ['7.x', 'Added 2 new commits:\n\n* 1a2b3c4 - One\n* 2b3c4d5 - Two'],
    ['7.x, one', 'Added 1 new commit:\n\n* 1a2b3c4 - One'],
  ])('counts %s', (_name, body) => {
    expect(pushedAfter(system(12, body), 11)).toBe(true);
  });

  it('counts only notes after the comment, written by the server, that say commits were added', () => {
    expect(pushedAfter(system(10, 'Added 1 commit:'), 11)).toBe(false);
    expect(pushedAfter(system(11, 'Added 1 commit:'), 11)).toBe(false);
    // A person's comment cannot pose as the server's record of a push.
    expect(pushedAfter({ id: 12, system: false, body: 'Added 1 commit:' }, 11)).toBe(false);
    for (const body of [
      'changed the title from **a** to **b**',
      'Status changed to closed',
      'mentioned in !3',
      'Reassigned to @alice',
      'I Added 1 commit: see above',
    ])
      expect(pushedAfter(system(12, body), 11)).toBe(false);
  });
});
