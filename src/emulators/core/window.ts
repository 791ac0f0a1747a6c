/** Rate-limit budgets in their text form (`--rate-limit 100/10s`): a limit per fixed window. */
import { ValidationError } from '../../errors.js';

/** `limit` units (requests, complexity points) per window of `windowSeconds`. */
export interface WindowSpec {
  limit: number;
  windowSeconds: number;
}

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600 };
const MAX = 1_000_000_000;

/** `5000/3600s`, `100/10s`, `5000/1h`, `600/5m` → a WindowSpec (`field` names the option in errors). */
export function parseWindow(text: string, field: string, example: string): WindowSpec {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*([smh]?)\s*$/.exec(text);
  if (!m) throw new ValidationError(field, `expected N/WINDOW such as ${example}, got "${text}"`);
  return validateWindow({ limit: Number(m[1]), windowSeconds: Number(m[2]) * UNIT_SECONDS[m[3] || 's']! }, field);
}

/** Both numbers integers from 1 to 10⁹; a copy holding only them. */
export function validateWindow(spec: WindowSpec, field: string): WindowSpec {
  for (const key of ['limit', 'windowSeconds'] as const) {
    const v = spec[key];
    if (!Number.isInteger(v) || v < 1 || v > MAX) {
      throw new ValidationError(`${field}.${key}`, `expected an integer from 1 to ${MAX}, got ${v}`);
    }
  }
  return { limit: spec.limit, windowSeconds: spec.windowSeconds };
}
