/**
 * The synthetic provider's knobs, read from `integrations.config` and validated once.
 *
 * Bounds (anything outside is refused with a `ValidationError` naming `config.<key>`):
 *
 * | knob                    | bound                                                        | fault knob |
 * |-------------------------|--------------------------------------------------------------|------------|
 * | `itemsPerDay`           | integer 0–{@link SYNTHETIC_LIMITS.itemsPerDay} (1000)        |            |
 * | `latencyMs`             | 0–{@link SYNTHETIC_LIMITS.latencyMs} ms (10 min)             |            |
 * | `failRate`              | probability 0–1                                              | yes        |
 * | `rateLimitRate`         | probability 0–1                                              | yes        |
 * | `hangRate`              | probability 0–1                                              | yes        |
 * | `hangMs`                | 0–{@link SYNTHETIC_LIMITS.hangMs} ms (10 min)                | yes        |
 * | `seed`                  | 32-bit signed integer: −2^31 to 2^31 − 1                     |            |
 * | `impersonate`           | a provider name: `^[a-z][a-z0-9_-]{0,63}$` (≤ 64 characters) |            |
 * | `rateLimitRetryAfterMs` | 0–{@link SYNTHETIC_LIMITS.rateLimitRetryAfterMs} ms (1 h)    |            |
 *
 * Fault knobs are accepted at creation only where fault injection is allowed
 * (`SYNCRELAY_ALLOW_FAULT_INJECTION=true`: demos, chaos runs, tests); see {@link validateSyntheticConfig}.
 */
import { ValidationError } from '../../errors.js';

export interface SyntheticConfig {
  /** Work items generated per (whole or partial) day of a unit's window. @default 5 */
  itemsPerDay: number;
  /** Time each unit waits before doing anything, in ms. @default 20 */
  latencyMs: number;
  /** Fault knob: probability a unit throws a plain provider error. @default 0 */
  failRate: number;
  /** Fault knob: probability a unit throws `RateLimitError(rateLimitRetryAfterMs)`. @default 0 */
  rateLimitRate: number;
  /**
   * Fault knob: probability a unit stalls for `hangMs` before doing anything (an upstream that stops
   * answering). The stall is an asynchronous wait: the process keeps serving, heartbeats go on, and
   * an abort (lease lost, soft timeout, shutdown) ends it at once. @default 0
   */
  hangRate: number;
  /** Seeds every pseudo-random decision and every generated item. @default 1 */
  seed: number;
  /** The provider name units carry, e.g. `linear` to exercise the Linear retry policy. */
  impersonate?: string;
  /** Fault knob: how long a hang stalls the unit, in ms. @default 10000 */
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

/** Upper bounds of the numeric knobs (`seed` is bounded on both sides). */
export const SYNTHETIC_LIMITS = {
  itemsPerDay: 1000,
  latencyMs: 600_000,
  hangMs: 600_000,
  seed: 2 ** 31 - 1,
  rateLimitRetryAfterMs: 3_600_000,
} as const;

/** The knobs that inject faults: refused at creation unless fault injection is allowed. */
export const FAULT_KNOBS: readonly (keyof SyntheticConfig)[] = ['failRate', 'rateLimitRate', 'hangRate', 'hangMs'];

/** What an impersonated provider name must look like: the rule of every provider name (see planning). */
export const IMPERSONATE_RE = /^[a-z][a-z0-9_-]{0,63}$/;

type Check = (field: string, value: unknown) => void;

const count =
  (max: number): Check =>
  (field, v) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) {
      throw new ValidationError(field, `must be an integer from 0 to ${max}`);
    }
  };
const millis =
  (max: number): Check =>
  (field, v) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max) {
      throw new ValidationError(field, `must be a number of milliseconds from 0 to ${max}`);
    }
  };
const probability: Check = (field, v) => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1) {
    throw new ValidationError(field, 'must be a number between 0 and 1');
  }
};
const seed: Check = (field, v) => {
  const max = SYNTHETIC_LIMITS.seed;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < -max - 1 || v > max) {
    throw new ValidationError(field, `must be an integer from ${-max - 1} to ${max}`);
  }
};
const providerName: Check = (field, v) => {
  if (typeof v !== 'string' || !IMPERSONATE_RE.test(v)) {
    throw new ValidationError(
      field,
      'must be a provider name: a lower-case letter, then at most 63 lower-case letters, digits, _ or -',
    );
  }
};

const CHECKS: Record<keyof SyntheticConfig, Check> = {
  itemsPerDay: count(SYNTHETIC_LIMITS.itemsPerDay),
  latencyMs: millis(SYNTHETIC_LIMITS.latencyMs),
  failRate: probability,
  rateLimitRate: probability,
  hangRate: probability,
  seed,
  impersonate: providerName,
  hangMs: millis(SYNTHETIC_LIMITS.hangMs),
  rateLimitRetryAfterMs: millis(SYNTHETIC_LIMITS.rateLimitRetryAfterMs),
};

/**
 * Validates `raw` and fills in defaults; throws `ValidationError` naming the field (`config.<key>`).
 * Reads a stored config, so fault knobs are accepted (they were checked when it was created).
 */
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

/**
 * The check of a config about to be stored: {@link parseSyntheticConfig}, and a fault knob (present
 * at all, whatever its value) is refused naming it unless `allowFaultInjection`.
 */
export function validateSyntheticConfig(raw: unknown, opts: { allowFaultInjection: boolean }): SyntheticConfig {
  const parsed = parseSyntheticConfig(raw);
  if (!opts.allowFaultInjection && raw !== null && typeof raw === 'object') {
    const knob = FAULT_KNOBS.find((k) => Object.hasOwn(raw, k));
    if (knob) {
      throw new ValidationError(
        `config.${knob}`,
        'is a fault-injection setting, accepted only when the server runs with SYNCRELAY_ALLOW_FAULT_INJECTION=true',
      );
    }
  }
  return parsed;
}
