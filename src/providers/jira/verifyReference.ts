/**
 * Jira's verify of its reference datasets, `sprints` and `members` (the steps: ../kit/verify.ts),
 * each in one job over every project of the unit (provider.ts `jobs`):
 *
 * - sprints: one pass per project (./verifySprints.ts), compared with the project's `sprints` rows;
 * - members: one listing of every project's assignable users (./verifyMembers.ts), compared with
 *   the integration's `members` rows (members belong to no source).
 *
 * Neither list gives an update time: every object is listed with `updatedAt` null, so a stored one
 * listed again is never stale (only a row marked deleted is written again), and a listing keeps no
 * keyset: a verify deferred by a rate limit lists again from the start (what it stamped stays).
 * The verify's start, before which the rows it has neither listed nor written are unseen, is the
 * unit's `before` (its run's planning time).
 */
import type { UnitResult } from '../../sdk/types.js';
import { resumableRead, type KeysetFormat } from '../kit/resume.js';
import { runVerify, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import type { Job } from './units.js';
import { memberReader } from './verifyMembers.js';
import { sprintReader } from './verifySprints.js';

/** A reference verify's checkpoint format: verify counts and the rows written of `surface`. */
function formatOf(surface: string): KeysetFormat {
  return { v: 1, order: 'asc', surfaces: [...VERIFY_COUNTS, surface] };
}

/** What a reference verify reads with: its passes, and what it found incomplete when done. */
interface ReferencePasses {
  readers: VerifyReader[];
  incomplete?: () => { surface: string; reason: string } | null;
}

/** The verify unit of `sprints`: one pass per project. */
export function verifySprints(job: Job): Promise<UnitResult> {
  return verifyReference(job, 'sprints', (counts) => ({
    readers: job.projects.map((project) => sprintReader(job, project, counts)),
  }));
}

/**
 * The verify unit of `members`: one listing of every project's assignable users. A search cut at
 * its cap (some project's pool may go on past its 1,000th user) still leads to the second step:
 * a member is marked only on the direct read's 404, never for being unlisted; the unit's result
 * says the listing was `incomplete`, as the members unit's does.
 */
export function verifyMembers(job: Job): Promise<UnitResult> {
  return verifyReference(job, 'members', (counts) => {
    const reader = memberReader(job, counts);
    return { readers: [reader.reader], incomplete: reader.incomplete };
  });
}

/** Runs `passes` on the kit from the unit's checkpoint; the result counts the rows written and the verify's. */
function verifyReference(
  job: Job,
  surface: string,
  passes: (counts: Record<string, number>) => ReferencePasses,
): Promise<UnitResult> {
  const f = formatOf(surface);
  return resumableRead(job.ctx, f, async (p, resumed) => {
    const made = passes(p.counts);
    await runVerify(job.ctx, made.readers, { f, p, resumed });
    const written = p.counts[surface] ?? 0;
    const cut = made.incomplete?.() ?? null;
    return {
      items: written,
      touchedSurfaces: written > 0 ? [surface] : [],
      verify: Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0])),
      ...(cut ? { incomplete: cut } : {}),
    };
  });
}
