/** Words for people: did-you-mean suggestions and counts with their nouns, a leaf any part may use. */
export { counted } from './count.ts';
export { closest, didYouMean } from './did-you-mean.ts';
