/**
 * A count and its noun, in agreement: `counted(1, 'open item')` is "1 open item", `counted(3, 'open
 * item')` "3 open items". The plural is the noun with an `s` unless given (`counted(n, 'item waits',
 * 'items wait')`): reports say how many of something there were, and "1 open items evaluated" reads
 * as careless as it is.
 */
export function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
