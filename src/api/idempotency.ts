/**
 * Idempotency-Key: the first successful answer to a key is recorded in the transaction that
 * produced its effect, and replayed for the same key and body; the same key with another body is
 * a 422. Failures are not recorded (their transaction rolls back), so a retry may succeed. Every
 * POST, PATCH and DELETE that changes something answers through `answerIdempotently`; the
 * reconciler prunes records older than SYNC_IDEMPOTENCY_RETENTION_HOURS.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db, Tx } from '../db/types.js';
import { getIdempotencyRecord, insertIdempotencyRecord, lockIdempotencyKey } from '../store/idempotency.js';
import { IdempotencyKey } from './contracts/common.js';
import { ApiError, fromZodError, invalidInput } from './errors.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

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

/**
 * How deep a fingerprinted value may nest. Validated bodies stay far below it; the bound keeps a
 * body no schema has bounded from overflowing the stack (a 400 instead).
 */
const MAX_FINGERPRINT_DEPTH = 64;

/** JSON with object keys sorted, so key order and whitespace do not change a request's hash. */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_FINGERPRINT_DEPTH) {
    throw invalidInput('body', `nests deeper than ${MAX_FINGERPRINT_DEPTH} levels`, 'body');
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k], depth + 1)}`);
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

/** The request's Idempotency-Key header, if sent; a malformed one is a 400 naming the header. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const r = IdempotencyKey.safeParse(raw);
  if (!r.success) {
    const e = fromZodError(r.error, 'header');
    e.details.field = 'Idempotency-Key';
    throw e;
  }
  return r.data;
}

/**
 * Answers a request that changes something: `effect` runs in one transaction with the record of
 * its answer (under the request's Idempotency-Key, if any), and the reply takes the answer's
 * status — the recorded one on a replay, with `Idempotent-Replayed: true`. `operation` and
 * `target` (the path's id) join the body in the request's fingerprint. Validate the input before
 * calling: a bad request is a 400 whatever its key.
 */
export async function answerIdempotently(
  deps: { db: Db; clock: Clock },
  request: FastifyRequest,
  reply: FastifyReply,
  op: {
    orgId: string;
    operation: string;
    target: string | null;
    status: number;
    /** What stands for the body in the fingerprint (a body holding a secret: its keyed fingerprint). */
    body?: unknown;
  },
  effect: (tx: Tx) => Promise<unknown>,
): Promise<unknown> {
  const key = idempotencyKeyOf(request);
  const fingerprint = [op.operation, op.target, (op.body === undefined ? request.body : op.body) ?? null];
  const answer = await runIdempotent(deps, { orgId: op.orgId, key, fingerprint }, op.status, effect);
  if (answer.replayed) reply.header(REPLAYED_HEADER, 'true');
  reply.code(answer.status);
  return answer.body;
}
