/**
 * Bounded memo of answers that never change (keyed by object ids): at most `limit` in weight (one
 * per answer unless `weigh` says otherwise, e.g. a tree's entries), the oldest going first.
 */
export class Memo<V> {
  private readonly map = new Map<string, { value: V; weight: number }>();
  private total = 0;
  constructor(
    private readonly limit: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}
  get(key: string): V | undefined {
    return this.map.get(key)?.value;
  }
  has(key: string): boolean {
    return this.map.has(key);
  }
  set(key: string, value: V): void {
    const weight = this.weigh(value);
    if (weight > this.limit) return;
    const old = this.map.get(key);
    if (old) {
      this.total -= old.weight;
      this.map.delete(key);
    }
    while (this.total + weight > this.limit) {
      const [oldest, entry] = this.map.entries().next().value!;
      this.map.delete(oldest);
      this.total -= entry.weight;
    }
    this.map.set(key, { value, weight });
    this.total += weight;
  }
}
