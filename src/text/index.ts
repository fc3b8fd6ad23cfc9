/** Words for people: did-you-mean suggestions, a leaf any part may use. */
export { closest, didYouMean } from './did-you-mean.ts';
