/**
 * Named prepared statements for the pg adapter. Every store statement is constant text with bound
 * values, so each connection parses and plans it once and afterwards only binds and executes.
 * Names are derived from the text; the set is bounded, and a text whose cached plan went stale
 * (a migration changed a table under a `SELECT *`) is run unprepared from then on.
 *
 * Behind a transaction pooler (SYNCRELAY_DB_POOLER=transaction) they are off: a statement prepared
 * on one server connection is unknown on the next one the pooler hands over.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';

/** Distinct statement texts prepared at most (the engine has about a hundred). */
const MAX_PREPARED = 500;
const PREPARABLE = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i;

const names = new Map<string, string>();
const unpreparable = new Set<string>();

/** The prepared-statement name for `text`, or undefined to run it unnamed. */
export function statementName(text: string): string | undefined {
  const known = names.get(text);
  if (known) return known;
  if (names.size >= MAX_PREPARED || unpreparable.has(text) || !PREPARABLE.test(text)) return undefined;
  const name = `sr_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
  names.set(text, name);
  return name;
}

/**
 * "cached plan must not change result type" (0A000): the statement's table changed shape since it
 * was prepared. Such a text is run unnamed from now on; returns whether `err` was that error.
 */
export function forgetIfStalePlan(err: unknown, text: string): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code !== '0A000' || typeof e.message !== 'string' || !e.message.includes('cached plan')) return false;
  names.delete(text);
  unpreparable.add(text);
  return true;
}

/** The statement for node-postgres: named when `prepared` and the text allows it, otherwise unnamed. */
export function queryConfig(text: string, values: readonly unknown[] | undefined, prepared: boolean): pg.QueryConfig {
  const name = prepared ? statementName(text) : undefined;
  return name
    ? { name, text, values: values as unknown[] | undefined }
    : { text, values: values as unknown[] | undefined };
}
