/**
 * A unit's resume checkpoint: the small JSON object a unit hands its rate-limit deferral
 * (`RateLimitError.checkpoint`) so that its next attempt starts where it stopped instead of at the
 * first page of its window.
 *
 * The rule, in full:
 * - Only the lease holder's rate-limit deferral writes it, replacing what was there: with the
 *   checkpoint the unit handed, or with nothing (it handed none, or one this module refused).
 * - The next attempt reads it from its claimed row (`UnitContext.checkpoint`).
 * - An expired lease or a soft timeout that retries the unit keeps the last deferral's checkpoint.
 *   It is still valid: a unit names a position only once every page before it was written through
 *   the fenced sink (committed before the next page is asked for, so before the deferral's own
 *   CAS), and a unit is retried after a lost lease only when every surface it writes is an
 *   idempotent upsert — what the lost attempt wrote past the checkpoint is simply written again.
 * - Every terminal end (success, failure, lease expiry that fails the unit, cancellation, denial)
 *   clears it.
 *
 * A checkpoint names positions and counts, never a secret: the engine drops one that contains the
 * integration's credential, and one larger than `MAX_CHECKPOINT_BYTES`, with a warning, and defers
 * the unit all the same (its next attempt starts from the beginning).
 */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A unit's resume checkpoint: a JSON object of the provider's own making (see the module comment). */
export type UnitCheckpoint = { [key: string]: JsonValue };

/** The largest checkpoint stored, in bytes of its JSON text (UTF-8). */
export const MAX_CHECKPOINT_BYTES = 4096;

/** A checkpoint as stored (its JSON text), or why it was refused. */
export type EncodedCheckpoint =
  | { ok: true; json: string }
  | { ok: false; reason: 'too_large'; bytes: number }
  | { ok: false; reason: 'not_an_object' };

/** The JSON text of `checkpoint`, within MAX_CHECKPOINT_BYTES, or why it cannot be stored. */
export function encodeCheckpoint(checkpoint: unknown): EncodedCheckpoint {
  if (checkpoint === null || typeof checkpoint !== 'object' || Array.isArray(checkpoint)) {
    return { ok: false, reason: 'not_an_object' };
  }
  let json: string;
  try {
    json = JSON.stringify(checkpoint);
  } catch {
    return { ok: false, reason: 'not_an_object' }; // a cycle or a BigInt: not JSON
  }
  const bytes = new TextEncoder().encode(json).length;
  if (bytes > MAX_CHECKPOINT_BYTES) return { ok: false, reason: 'too_large', bytes };
  return { ok: true, json };
}

/** Whether the JSON text of a checkpoint contains `secret` (as it is, or as JSON escapes it). */
export function containsSecret(json: string, secret: string): boolean {
  if (secret.length === 0) return false;
  return json.includes(secret) || json.includes(JSON.stringify(secret).slice(1, -1));
}
