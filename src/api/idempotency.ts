/**
 * Idempotency-Key: the first successful answer to a key is recorded in the transaction that
 * produced its effect, and replayed for the same key and body; the same key with another body is
 * a 422. Failures are not recorded (their transaction rolls back), so a retry may succeed.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Db, Tx } from '../db/types.js';
import { getIdempotencyRecord, insertIdempotencyRecord, lockIdempotencyKey } from '../store/idempotency.js';
import { ApiError } from './errors.js';

export interface Answer {
  status: number;
  body: unknown;
  /** True when this is a replay of a recorded answer. */
  replayed: boolean;
}

export interface IdempotentRequest {
  orgId: string;
  /** The Idempotency-Key header, if sent (already validated). */
  key: string | undefined;
  /** What identifies the request: the operation, its path ids and its body. */
  fingerprint: unknown;
}

/** JSON with object keys sorted, so key order and whitespace do not change a request's hash. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestHash(fingerprint: unknown): string {
  return createHash('sha256').update(canonicalJson(fingerprint)).digest('hex');
}

/**
 * Runs `effect` in one transaction; with a key, under a per-(org, key) lock that also covers the
 * lookup of a recorded answer and the recording of the new one.
 */
export async function runIdempotent(
  deps: { db: Db; clock: Clock },
  req: IdempotentRequest,
  status: number,
  effect: (tx: Tx) => Promise<unknown>,
): Promise<Answer> {
  const key = req.key;
  if (key === undefined) {
    const body = await deps.db.transaction(effect);
    return { status, body, replayed: false };
  }
  const hash = requestHash(req.fingerprint);
  return deps.db.transaction(async (tx) => {
    await lockIdempotencyKey(tx, req.orgId, key);
    const prior = await getIdempotencyRecord(tx, req.orgId, key);
    if (prior) {
      if (prior.request_hash !== hash) {
        throw new ApiError(422, 'idempotency_key_reused', 'this Idempotency-Key was used with a different request', {
          field: 'Idempotency-Key',
        });
      }
      return { status: prior.status_code, body: prior.response, replayed: true };
    }
    const body = await effect(tx);
    await insertIdempotencyRecord(
      tx,
      { orgId: req.orgId, key, requestHash: hash, statusCode: status, response: body },
      deps.clock.now(),
    );
    return { status, body, replayed: false };
  });
}
