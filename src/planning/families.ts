/**
 * Dataset families read together: a dataset that declares `fetchedWith: <anchor>` gets no unit of its
 * own when its anchor is planned in the same run; the anchor's units carry it. A member whose anchor
 * is not planned (not enabled, or not asked for) is planned alone. Pure.
 */
import type { DatasetSpec } from '../sdk/types.js';

export interface Families {
  /** Anchor key → the member keys its units carry, in the provider's dataset order. */
  carried: ReadonlyMap<string, readonly string[]>;
  /** Keys planned through an anchor (no units of their own). */
  members: ReadonlySet<string>;
}

/** Groups the planned `specs` into families: only an anchor that is itself planned, of the same tier, carries. */
export function familiesOf(specs: readonly DatasetSpec[]): Families {
  const byKey = new Map(specs.map((s) => [s.key, s]));
  const carried = new Map<string, string[]>();
  const members = new Set<string>();
  for (const spec of specs) {
    const anchor = spec.fetchedWith === undefined ? undefined : byKey.get(spec.fetchedWith);
    if (!anchor || anchor.key === spec.key || anchor.fetchedWith !== undefined || anchor.tier !== spec.tier) continue;
    carried.set(anchor.key, [...(carried.get(anchor.key) ?? []), spec.key]);
    members.add(spec.key);
  }
  return { carried, members };
}

/**
 * The watermark an incremental unit of a family starts from: the earliest of its datasets' marks
 * (none of them may miss what changed since its own), null when one that keeps a watermark has none.
 */
export function familyWatermark(
  specs: readonly DatasetSpec[],
  markOf: (datasetKey: string) => Date | null,
): Date | null {
  let earliest: Date | null = null;
  for (const spec of specs.filter((s) => s.keepsWatermark)) {
    const mark = markOf(spec.key);
    if (mark === null) return null;
    if (earliest === null || mark.getTime() < earliest.getTime()) earliest = mark;
  }
  return earliest;
}
