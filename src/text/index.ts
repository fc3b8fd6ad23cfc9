/** Words for people: did-you-mean suggestions, counts with their nouns, and `unhandled` (the end of an exhaustive switch, naming the case left out); a leaf any part may use. */
export { counted } from './count.ts';
export { closest, didYouMean } from './did-you-mean.ts';
export { unhandled } from './unhandled.ts';
