import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance } from '../../src/text/did-you-mean.ts';

describe('did you mean', () => {
  it.each([
    { a: 'coment', b: 'comment', distance: 1 },
    { a: 'lable', b: 'label', distance: 1 },
    { a: 'clse', b: 'close', distance: 1 },
    { a: 'kitten', b: 'sitting', distance: 3 },
    { a: '', b: 'abc', distance: 3 },
  ])('$a to $b is $distance', ({ a, b, distance }) => {
    expect(editDistance(a, b)).toBe(distance);
  });

  const actions = ['label', 'comment', 'close', 'reopen', 'merge', 'merge_when_build_succeeds'];
  it.each([
    { word: 'coment', hint: 'did you mean "comment"?' },
    { word: 'Close', hint: 'did you mean "close"?' },
    { word: 'merge_when', hint: 'did you mean "merge_when_build_succeeds"?' },
    { word: 'deploy', hint: undefined },
    { word: 'xy', hint: undefined },
  ])('$word: $hint', ({ word, hint }) => {
    expect(didYouMean(word, actions)).toBe(hint);
  });
});
