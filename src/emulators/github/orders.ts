/** Sorted views of a repository's records, cached until the repository changes (mutate). */
import type { EventRecord, ItemRecord, RepoRecord } from './model.js';

export type ItemSort = 'created' | 'updated' | 'comments';

const KEY: Record<ItemSort, (i: ItemRecord) => number> = {
  created: (i) => i.createdAt,
  updated: (i) => i.updatedAt,
  comments: (i) => i.comments.length,
};

const cache = new WeakMap<RepoRecord, { version: number; orders: Map<ItemSort, ItemRecord[]> }>();

/** Issues and pulls ascending by `sort`, ties by id. Do not modify the result. */
export function itemsBy(repo: RepoRecord, sort: ItemSort): readonly ItemRecord[] {
  let entry = cache.get(repo);
  if (!entry || entry.version !== repo.version) {
    entry = { version: repo.version, orders: new Map() };
    cache.set(repo, entry);
  }
  let order = entry.orders.get(sort);
  if (!order) {
    const key = KEY[sort];
    order = repo.items.slice().sort((a, b) => key(a) - key(b) || a.id - b.id);
    entry.orders.set(sort, order);
  }
  return order;
}

/** `list` in `direction` (a copy when descending). */
export function directed<T>(list: readonly T[], direction: 'asc' | 'desc'): readonly T[] {
  return direction === 'asc' ? list : list.slice().reverse();
}

const scrambled = new WeakMap<
  RepoRecord,
  { version: number; orders: WeakMap<readonly EventRecord[], EventRecord[]> }
>();

/**
 * Events in an order that is not their time order (a fixed scramble of their ids): stable while
 * the repository does not change; a new event lands anywhere in it. Do not modify the result.
 */
export function unsorted(repo: RepoRecord, events: readonly EventRecord[]): readonly EventRecord[] {
  let entry = scrambled.get(repo);
  if (!entry || entry.version !== repo.version) {
    entry = { version: repo.version, orders: new WeakMap() };
    scrambled.set(repo, entry);
  }
  let order = entry.orders.get(events);
  if (!order) {
    order = events.slice().sort((a, b) => scramble(a.id) - scramble(b.id) || a.id - b.id);
    entry.orders.set(events, order);
  }
  return order;
}

/** A fixed bijection of 32-bit ids that does not keep their order. */
function scramble(id: number): number {
  return Math.imul(id ^ (id >>> 16), 0x45d9f3b) >>> 0;
}
