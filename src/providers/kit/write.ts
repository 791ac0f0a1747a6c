/**
 * The page writer: each page's rows go through the unit's fenced sink (a lost lease stops the
 * unit, nothing written after) before the next page is asked for, and what was written becomes
 * the unit's result.
 */
import type { UnitContext, UnitResult } from '../../sdk/types.js';
import type { Row } from './rows.js';

type Fenced = Pick<UnitContext, 'sink' | 'lease'>;

/** Writes one page's rows of `surface` through the fenced sink (no rows: no write); returns how many. */
export async function writeRows(ctx: Fenced, surface: string, rows: readonly Row[]): Promise<number> {
  if (rows.length === 0) return 0;
  await ctx.sink.write(ctx.lease, surface, rows);
  return rows.length;
}

/**
 * Writes a unit's pages surface by surface and counts them into the unit's result: into `counts`
 * when given (a resumed read's counts so far, ./resume.ts, which it keeps up to date).
 */
export class PageWriter {
  constructor(
    private readonly ctx: Fenced,
    private readonly counts: Record<string, number> = {},
  ) {}

  /** Writes one page's rows of `surface`; returns how many. */
  async write(surface: string, rows: readonly Row[]): Promise<number> {
    const n = await writeRows(this.ctx, surface, rows);
    if (n > 0) this.counts[surface] = (this.counts[surface] ?? 0) + n;
    return n;
  }

  /** Rows written, and the surfaces that got any (in the order they first did). */
  result(): UnitResult {
    const touched = Object.entries(this.counts).filter(([, n]) => n > 0);
    return { items: touched.reduce((sum, [, n]) => sum + n, 0), touchedSurfaces: touched.map(([s]) => s) };
  }
}
