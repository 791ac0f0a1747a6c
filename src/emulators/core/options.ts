/**
 * The options every emulator takes (where it listens, its seed, its clock, where its data ends,
 * how much of its request log it keeps, where its warning goes) and the parsers of their
 * command-line text. A bad value is a ValidationError naming the option. Each emulator's
 * credentials are its own options; any not given is made afresh at every start (credentials.ts).
 */
import { systemClock, type Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';

export interface CommonEmulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** @default 127.0.0.1; any address that is not loopback makes the emulator warn (see `warn`). */
  host?: string;
  /** Seed of the generated data and the fault draws (not of the credentials). @default 1 */
  seed?: number;
  /** The instant the data ends at (default: the clock's now at start). */
  now?: Date;
  /** Rate-limit windows, resets and mutation times (default: system clock). */
  clock?: Clock;
  /** Request log entries kept (oldest dropped first). @default 100 000 */
  logLimit?: number;
  /** Receives the one-line warning of an emulator bound to a non-loopback address. @default standard error */
  warn?: (line: string) => void;
}

export interface ResolvedCommonOptions {
  seed: number;
  clock: Clock;
  /** Where the generated data ends, epoch ms. */
  nowMs: number;
  logLimit: number;
}

/** The common options with their defaults; the seed must be an integer. */
export function resolveCommon(opts: CommonEmulatorOptions): ResolvedCommonOptions {
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed)) throw new ValidationError('seed', `expected an integer, got ${seed}`);
  const clock = opts.clock ?? systemClock;
  return { seed, clock, nowMs: (opts.now ?? clock.now()).getTime(), logLimit: opts.logLimit ?? 100_000 };
}

/** A flag's whole number: digits only, at most `max`. */
export function intFlag(raw: string, field: string, max: number): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n > max) {
    throw new ValidationError(field, `expected an integer from 0 to ${max}, got "${raw}"`);
  }
  return n;
}

/** A flag's ISO-8601 time; with `zoned`, it must name its zone (`Z`, `+02:00`). */
export function instantFlag(raw: string, field: string, zoned: boolean): Date {
  const ms = Date.parse(raw);
  if (!Number.isFinite(ms) || (zoned && !/(Z|[+-]\d{2}:?\d{2})$/.test(raw))) {
    throw new ValidationError(field, `expected an ISO-8601 time${zoned ? ' with a zone' : ''}, got "${raw}"`);
  }
  return new Date(ms);
}

/** The common options' command-line text. */
export interface CommonEmulatorFlags {
  port?: string;
  host?: string;
  seed?: string;
  now?: string;
  logLimit?: string;
}

/**
 * The common options from their flag text: `seedMax` bounds the seed; with `zonedNow`, `--now` must
 * name its zone.
 */
export function commonFlags(
  flags: CommonEmulatorFlags,
  rules: { seedMax: number; zonedNow: boolean },
): CommonEmulatorOptions {
  const o: CommonEmulatorOptions = {};
  if (flags.port !== undefined) o.port = intFlag(flags.port, 'port', 65_535);
  if (flags.host !== undefined) o.host = flags.host;
  if (flags.seed !== undefined) o.seed = intFlag(flags.seed, 'seed', rules.seedMax);
  if (flags.now !== undefined) o.now = instantFlag(flags.now, 'now', rules.zonedNow);
  if (flags.logLimit !== undefined) o.logLimit = intFlag(flags.logLimit, 'logLimit', Number.MAX_SAFE_INTEGER);
  return o;
}

/**
 * CLI-style arguments (`--flag value` or `--flag=value`) → each flag's text under its option name
 * (`flags` maps `--rate-limit` to `rateLimit`). An unknown flag or a missing value is refused.
 */
export function flagValues<K extends string>(
  argv: readonly string[],
  flags: Readonly<Record<string, K>>,
): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const key = Object.hasOwn(flags, flag) ? flags[flag] : undefined;
    if (!key) throw new ValidationError('args', `unknown option "${flag}" (${Object.keys(flags).join(', ')})`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new ValidationError(key, `${flag} needs a value`);
    out[key] = value;
  }
  return out;
}
