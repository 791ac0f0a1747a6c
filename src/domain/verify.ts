/**
 * A verify's comparison of one source's listing at the provider with what the store holds for it
 * (docs/normalized-store.md, "Deletions"). Pure: the caller lists and reads, this decides.
 */

/** One object in the provider's listing: its id and the provider's update time (null if not given). */
export interface ListedItem {
  id: string;
  updatedAt: Date | null;
}

/** One object the store holds: its id, the update time stored, and when it was marked deleted. */
export interface StoredItem {
  id: string;
  updatedAt: Date | null;
  deletedAt: Date | null;
}

/** What a verify does about a listing; each list in the order its items were given. */
export interface ListingDiff {
  /** Listed, not stored: to fetch and write. */
  missing: string[];
  /**
   * Listed, stored, and to fetch again: the listing's update time is newer than the stored one
   * (or the store has none), or the stored row is deleted (every `restored` id is here too).
   */
  stale: string[];
  /** Listed and stored deleted: writing it again clears its `deleted_at`. */
  restored: string[];
  /** Stored live, not listed: to mark deleted. Empty unless the listing is complete. */
  deleted: string[];
  /** The distinct ids listed. */
  checked: number;
}

/**
 * Compares `listed` with `stored`. An id listed twice (a page shift) counts once, at its latest
 * update time. Nothing is `deleted` unless `complete` — every page of the listing was read, none
 * failed, was cut short or was rate limited: an absence from a partial listing proves nothing. A
 * listed item is never deleted. Listed items neither missing nor stale are unchanged.
 */
export function diffListing(
  listed: readonly ListedItem[],
  stored: readonly StoredItem[],
  complete: boolean,
): ListingDiff {
  const latest = latestById(listed);
  const byId = new Map(stored.map((s) => [s.id, s]));
  const diff: ListingDiff = { missing: [], stale: [], restored: [], deleted: [], checked: latest.size };
  for (const [id, updatedAt] of latest) {
    const row = byId.get(id);
    if (row === undefined) {
      diff.missing.push(id);
    } else if (row.deletedAt !== null) {
      diff.stale.push(id);
      diff.restored.push(id);
    } else if (isNewer(updatedAt, row.updatedAt)) {
      diff.stale.push(id);
    }
  }
  if (complete) {
    for (const row of byId.values()) if (row.deletedAt === null && !latest.has(row.id)) diff.deleted.push(row.id);
  }
  return diff;
}

/** Each listed id with its latest update time, in the order ids first appear. */
function latestById(listed: readonly ListedItem[]): Map<string, Date | null> {
  const latest = new Map<string, Date | null>();
  for (const item of listed) {
    const seen = latest.get(item.id);
    if (seen === undefined || isNewer(item.updatedAt, seen)) latest.set(item.id, item.updatedAt);
  }
  return latest;
}

/** Whether the provider's `listed` time is newer than `stored`; an unknown listed time never is. */
function isNewer(listed: Date | null, stored: Date | null): boolean {
  if (listed === null) return false;
  return stored === null || listed.getTime() > stored.getTime();
}

/** What a verify unit counts (its result's `verify`), and a verify run's summary. */
export const VERIFY_COUNTS = ['checked', 'missing', 'stale', 'restored', 'deleted'] as const;
export type VerifyCount = (typeof VERIFY_COUNTS)[number];
export type VerifyCounts = Record<VerifyCount, number>;

/** A unit result's verify counts, or null when it carries none (or not all as counts). */
export function verifyCountsOf(result: unknown): VerifyCounts | null {
  if (typeof result !== 'object' || result === null) return null;
  const v = (result as { verify?: unknown }).verify;
  if (typeof v !== 'object' || v === null) return null;
  const out = {} as VerifyCounts;
  for (const k of VERIFY_COUNTS) {
    const n = (v as Record<string, unknown>)[k];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return null;
    out[k] = n;
  }
  return out;
}
