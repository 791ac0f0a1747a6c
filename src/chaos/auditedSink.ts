/**
 * A provider's sink as the chaos run's engine processes use it: every fenced write also records
 * (unit, lease owner, `surface:rows`) in the run's write audit, inside the write's own transaction
 * right after the lease check locked the unit row — so the no-fenced-out-writes invariant judges
 * a real provider's writes by when the database saw them, as it does the synthetic sink's (whose
 * rows an audit trigger records). A chaos hook, in the chaos run's own database only.
 */
import type { Tx } from '../db/types.js';
import type { LeaseGuard, Sink, SinkTombstones } from '../sdk/types.js';
import { auditTables } from './database.js';

/** Records one write. Takes no row locks (the caller's lease check holds the unit row FOR SHARE). */
async function recordWrite(tx: Tx, guard: LeaseGuard, what: string): Promise<void> {
  await tx.query(
    `INSERT INTO ${auditTables(tx.schema).itemWrites} (unit_id, lease_owner, item_key) VALUES ($1, $2, $3)`,
    [guard.unitId, guard.owner, what],
  );
}

function auditedGuard(guard: LeaseGuard, what: string): LeaseGuard {
  return {
    unitId: guard.unitId,
    owner: guard.owner,
    assertHeld: () => guard.assertHeld(),
    async assertHeldIn(tx) {
      await guard.assertHeldIn(tx);
      await recordWrite(tx, guard, what);
    },
  };
}

/** A verify's tombstone writes (the listed stamp, the deleted mark), audited like rows. */
function auditedTombstones(inner: SinkTombstones): SinkTombstones {
  return {
    compare: (guard, scope, ids, at) =>
      inner.compare(auditedGuard(guard, `${scope.surface}:verified:${ids.length}`), scope, ids, at),
    unseen: (scope, since, after, limit) => inner.unseen(scope, since, after, limit),
    markDeleted: (guard, scope, ids, at, unseenSince) =>
      inner.markDeleted(auditedGuard(guard, `${scope.surface}:deleted:${ids.length}`), scope, ids, at, unseenSince),
  };
}

/** `inner`, its writes audited (a verify's tombstone writes too); its surface hooks passed through. */
export function auditedSink(inner: Sink): Sink {
  return {
    name: inner.name,
    surfaces: inner.surfaces,
    retrySafeSurfaces: inner.retrySafeSurfaces,
    write: (guard, surface, rows) => inner.write(auditedGuard(guard, `${surface}:${rows.length}`), surface, rows),
    useSurfaceHooks: (hooks) => inner.useSurfaceHooks?.(hooks),
    ...(inner.tombstones ? { tombstones: auditedTombstones(inner.tombstones) } : {}),
  };
}
