/**
 * The checkpoint a rate-limited unit hands its deferral, made storable: bounded in size and never
 * holding the integration's credential (the rules: ../domain/checkpoint.ts). A refused checkpoint
 * is logged (its size and why, never its content) and the unit is deferred without one.
 */
import type { Logger } from 'pino';
import { containsSecret, encodeCheckpoint, MAX_CHECKPOINT_BYTES } from '../domain/checkpoint.js';
import type { RateLimitError } from '../errors.js';
import type { UnitCredential } from '../sdk/types.js';

/** The JSON text to store for `err.checkpoint`, or null (none handed, or refused with a warning). */
export function storableCheckpoint(
  err: RateLimitError,
  credential: UnitCredential | null,
  logger: Logger,
): string | null {
  if (err.checkpoint === null) return null;
  const encoded = encodeCheckpoint(err.checkpoint);
  if (!encoded.ok) {
    const bytes = encoded.reason === 'too_large' ? encoded.bytes : null;
    logger.warn({ reason: encoded.reason, bytes, limit: MAX_CHECKPOINT_BYTES }, 'unit checkpoint dropped');
    return null;
  }
  if (holdsCredential(encoded.json, credential)) {
    logger.warn({ reason: 'holds_credential' }, 'unit checkpoint dropped');
    return null;
  }
  return encoded.json;
}

/** Whether the checkpoint's text contains the credential's secret (one that cannot be read: no). */
function holdsCredential(json: string, credential: UnitCredential | null): boolean {
  if (!credential) return false;
  let secret: string;
  try {
    secret = credential.reveal();
  } catch {
    return false; // the unit could not read it either
  }
  return containsSecret(json, secret);
}
