/**
 * Deterministic decisions and items: everything derives from a hash of the seed and stable ids,
 * so the same seed + unit + attempt always behaves the same, and a retried unit upserts the same rows.
 */
import { createHash } from 'node:crypto';
import { DAY_MS } from '../../domain/windows.js';
import type { Tier } from '../../domain/statuses.js';
import type { SyntheticConfig } from './config.js';

/** Items each reference-tier unit (teams, members, projects) generates. */
export const REFERENCE_ITEMS_PER_DATASET = 3;

/** A uniform number in [0, 1) drawn from `seed` and `parts`. */
export function draw(seed: number, ...parts: readonly (string | number)[]): number {
  const digest = createHash('sha256')
    .update(JSON.stringify([seed, ...parts]))
    .digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

export interface UnitDecision {
  hang: boolean;
  rateLimit: boolean;
  fail: boolean;
}

/** What an attempt of a unit does; each fault is an independent draw from (seed, unit, attempt). */
export function decideUnit(config: SyntheticConfig, unitId: string, attempt: number): UnitDecision {
  return {
    hang: draw(config.seed, unitId, attempt, 'hang') < config.hangRate,
    rateLimit: draw(config.seed, unitId, attempt, 'rate_limit') < config.rateLimitRate,
    fail: draw(config.seed, unitId, attempt, 'fail') < config.failRate,
  };
}

export interface ItemScope {
  sourceKey: string | null;
  datasetKey: string;
  tier: Tier;
  since: Date | null;
  before: Date | null;
}

export interface SyntheticItem {
  sourceKey: string;
  datasetKey: string;
  /** Stable across retries and re-windowing: derived from the day and index only. */
  itemKey: string;
  /** `YYYY-MM-DD` (UTC). */
  itemDay: string;
  payload: Record<string, unknown>;
}

/** The source key of items written by units without a source (reference tier). */
export const NO_SOURCE_KEY = '*';

/**
 * The items of one source × dataset × window: `itemsPerDay` per whole or partial UTC day for work
 * items, a fixed few for reference datasets. `now` only anchors a window with both bounds NULL.
 */
export function generateItems(config: SyntheticConfig, scope: ItemScope, now: Date): SyntheticItem[] {
  const sourceKey = scope.sourceKey ?? NO_SOURCE_KEY;
  const days = windowDays(scope.since, scope.before, now);
  const item = (itemKey: string, itemDay: string, n: number): SyntheticItem => ({
    sourceKey,
    datasetKey: scope.datasetKey,
    itemKey,
    itemDay,
    payload: {
      n,
      title: `${scope.datasetKey} ${itemKey}`,
      score: Math.floor(draw(config.seed, sourceKey, scope.datasetKey, itemKey) * 1000),
    },
  });
  if (scope.tier === 'reference') {
    const day = days[0] ?? utcDay(now);
    return Array.from({ length: REFERENCE_ITEMS_PER_DATASET }, (_, i) =>
      item(`${scope.datasetKey}-${i + 1}`, day, i + 1),
    );
  }
  return days.flatMap((day) =>
    Array.from({ length: config.itemsPerDay }, (_, i) => item(`${day}#${i + 1}`, day, i + 1)),
  );
}

/**
 * The UTC days `[since, before)` touches (partial days count). An unbounded window counts as one
 * day: the last day before `before`, else the day of `since`, else today.
 */
export function windowDays(since: Date | null, before: Date | null, now: Date): string[] {
  if (!since || !before) {
    const anchor = before ? new Date(before.getTime() - 1) : (since ?? now);
    return [utcDay(anchor)];
  }
  const days: string[] = [];
  if (before.getTime() <= since.getTime()) return days;
  const first = Math.floor(since.getTime() / DAY_MS) * DAY_MS;
  for (let t = first; t < before.getTime(); t += DAY_MS) days.push(utcDay(new Date(t)));
  return days;
}

function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}
