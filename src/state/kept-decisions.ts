/**
 * The decisions kept for explain, per item (issue 30: "why did it act?" answered after the echoes).
 * Each evaluation the bot records goes to its item's list; the bot's own label, status and comment
 * fire hooks back, and each echo is evaluated and recorded too, so a list that kept only the newest
 * ones would soon hold echoes only. So a decision that acted (the caller says so) is kept apart from
 * the ring of the newest evaluations:
 *
 * - count: a decision stays while it is among the item's newest `decisionHistory`, or among its
 *   newest `actingDecisions` that acted;
 * - bytes per item (`decisionItemBytes`): the newest decision and the newest that acted always
 *   stay; then those that acted, newest first, then the others, newest first, as long as the sum
 *   of their sizes (their JSON) fits; the rest goes (the oldest that did nothing go first);
 * - bytes in all (`decisionBytes`): items from the most recently decided on, as long as the sum
 *   fits; the most recently decided item always stays; the others' kept decisions go whole.
 *
 * The PostgreSQL store applies the same rules in SQL (postgres/decision-history.ts), so both
 * backends keep the same decisions (the contract tests check it).
 */
import type { DecisionRecord } from './store.ts';

export interface KeptBounds {
  decisionHistory: number;
  actingDecisions: number;
  decisionItemBytes: number;
  decisionBytes: number;
}

interface Kept {
  record: DecisionRecord;
  /** Its JSON's size in bytes (UTF-8), as PostgreSQL's `octet_length` counts it. */
  bytes: number;
}

export const recordBytes = (record: DecisionRecord): number => Buffer.byteLength(JSON.stringify(record));

export class KeptDecisions {
  /** Item key -> its kept decisions, oldest first. */
  readonly #items = new Map<string, Kept[]>();
  #bytes = 0;
  readonly #bounds: KeptBounds;

  constructor(bounds: KeptBounds) {
    this.#bounds = bounds;
  }

  /** Bytes of every kept decision. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#items.size;
  }

  /** Newest first. */
  of(itemKey: string): DecisionRecord[] {
    const list = this.#items.get(itemKey);
    return list === undefined ? [] : list.map((kept) => kept.record).reverse();
  }

  /** Every item's kept decisions, oldest first (for the state document). */
  entries(): [string, DecisionRecord[]][] {
    return [...this.#items].map(([itemKey, list]) => [itemKey, list.map((kept) => kept.record)]);
  }

  /** Sets an item's kept decisions (oldest first) as read back, then applies the per-item bounds. */
  restore(itemKey: string, records: readonly DecisionRecord[]): void {
    this.forget(itemKey);
    const list = records.map((record) => ({ record, bytes: recordBytes(record) }));
    this.#set(itemKey, trimItem(list, this.#bounds));
  }

  /** The item's newest decision; applies the per-item bounds (not the total: `enforceTotal`). */
  add(record: DecisionRecord): void {
    const list = this.#items.get(record.itemKey) ?? [];
    this.forget(record.itemKey);
    this.#set(record.itemKey, trimItem([...list, { record, bytes: recordBytes(record) }], this.#bounds));
  }

  forget(itemKey: string): void {
    const list = this.#items.get(itemKey);
    if (list === undefined) return;
    this.#items.delete(itemKey);
    for (const kept of list) this.#bytes -= kept.bytes;
  }

  /**
   * Past `decisionBytes`, drops the kept decisions of the least recently decided items.
   * `newestFirst`: the item keys, most recently decided first (the latest decisions' order).
   */
  enforceTotal(newestFirst: Iterable<string>): void {
    if (this.#bytes <= this.#bounds.decisionBytes) return;
    let running = 0;
    let first = true;
    for (const itemKey of newestFirst) {
      const list = this.#items.get(itemKey);
      if (list === undefined) continue;
      running += list.reduce((sum, kept) => sum + kept.bytes, 0);
      if (!first && running > this.#bounds.decisionBytes) this.forget(itemKey);
      first = false;
    }
  }

  #set(itemKey: string, list: Kept[]): void {
    if (list.length === 0) return;
    this.#items.set(itemKey, list);
    for (const kept of list) this.#bytes += kept.bytes;
  }
}

/** The per-item bounds on one item's decisions, oldest first; returns those that stay, oldest first. */
function trimItem(list: readonly Kept[], bounds: KeptBounds): Kept[] {
  const n = list.length;
  // By count: in the ring of the newest, or among the newest that acted.
  const counted: { kept: Kept; index: number; acted: boolean; must: boolean }[] = [];
  let acted = 0;
  for (let index = n - 1; index >= 0; index--) {
    const kept = list[index] as Kept;
    const didAct = kept.record.acted === true;
    if (didAct) acted++;
    const rank = n - 1 - index;
    if (rank < bounds.decisionHistory || (didAct && acted <= bounds.actingDecisions))
      counted.push({ kept, index, acted: didAct, must: rank === 0 || (didAct && acted === 1) });
  }
  // By bytes: the newest and the newest that acted first, then those that acted, then the others,
  // each newest first; a decision stays while the running sum fits (or it is one of the first two).
  const order = [...counted].sort(
    (a, b) => Number(b.must) - Number(a.must) || Number(b.acted) - Number(a.acted) || b.index - a.index,
  );
  let running = 0;
  const stays = new Set<number>();
  for (const entry of order) {
    running += entry.kept.bytes;
    if (entry.must || running <= bounds.decisionItemBytes) stays.add(entry.index);
  }
  return list.filter((_, index) => stays.has(index));
}
