/** The synthetic provider's knobs, read from `integrations.config` and validated once. */
import { ValidationError } from '../../errors.js';

export interface SyntheticConfig {
  /** Work items generated per (whole or partial) day of a unit's window. @default 5 */
  itemsPerDay: number;
  /** Time each unit waits before doing anything, in ms. @default 20 */
  latencyMs: number;
  /** Probability a unit throws a plain provider error. @default 0 */
  failRate: number;
  /** Probability a unit throws `RateLimitError(rateLimitRetryAfterMs)`. @default 0 */
  rateLimitRate: number;
  /** Probability a unit freezes the whole process for `hangMs` (a lost worker). @default 0 */
  hangRate: number;
  /** Seeds every pseudo-random decision and every generated item. @default 1 */
  seed: number;
  /** The provider name units carry, e.g. `linear` to exercise the Linear retry policy. */
  impersonate?: string;
  /** How long a hang freezes the process, in ms; set it past the lease to lose the unit. @default 10000 */
  hangMs: number;
  /** The retry-after a synthetic rate limit asks for, in ms. @default 1000 */
  rateLimitRetryAfterMs: number;
}

export const SYNTHETIC_DEFAULTS: Readonly<SyntheticConfig> = {
  itemsPerDay: 5,
  latencyMs: 20,
  failRate: 0,
  rateLimitRate: 0,
  hangRate: 0,
  seed: 1,
  hangMs: 10_000,
  rateLimitRetryAfterMs: 1000,
};

type Check = (field: string, value: unknown) => void;

const nonNegativeInt: Check = (field, v) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new ValidationError(field, 'must be an integer ≥ 0');
  }
};
const nonNegative: Check = (field, v) => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ValidationError(field, 'must be a number ≥ 0');
};
const probability: Check = (field, v) => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1) {
    throw new ValidationError(field, 'must be a number between 0 and 1');
  }
};
const integer: Check = (field, v) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new ValidationError(field, 'must be an integer');
};
const name: Check = (field, v) => {
  if (typeof v !== 'string' || v.trim() === '') throw new ValidationError(field, 'must be a non-empty string');
};

const CHECKS: Record<keyof SyntheticConfig, Check> = {
  itemsPerDay: nonNegativeInt,
  latencyMs: nonNegative,
  failRate: probability,
  rateLimitRate: probability,
  hangRate: probability,
  seed: integer,
  impersonate: name,
  hangMs: nonNegative,
  rateLimitRetryAfterMs: nonNegative,
};

/** Validates `raw` and fills in defaults; throws `ValidationError` naming the field (`config.<key>`). */
export function parseSyntheticConfig(raw: unknown): SyntheticConfig {
  if (raw === null || raw === undefined) return { ...SYNTHETIC_DEFAULTS };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ValidationError('config', 'must be an object');
  const out: Record<string, unknown> = { ...SYNTHETIC_DEFAULTS };
  for (const [key, value] of Object.entries(raw)) {
    const check = Object.hasOwn(CHECKS, key) ? CHECKS[key as keyof SyntheticConfig] : undefined;
    if (!check) throw new ValidationError(`config.${key}`, 'unknown setting for the synthetic provider');
    if (value === undefined) continue;
    check(`config.${key}`, value);
    out[key] = value;
  }
  return out as unknown as SyntheticConfig;
}
