/**
 * Fault specs, as every emulator takes them: a JSON array of objects, or comma-separated
 * `kind[:key=value…]` entries (`server-error:p=0.05:status=503,slow:delay=200`). What differs
 * between emulators is a table (FaultRules): the kinds, the setting that picks the requests a
 * fault applies to, the extra numeric settings and the statuses an answer may take. A bad spec is
 * a ValidationError naming the entry (`faults[1].status`).
 */
import { ValidationError } from '../../errors.js';

/** What every emulator's fault spec has. */
export interface FaultSpecBase {
  kind: string;
  /** Each matching request meets the fault with this probability (drawn from the seed). */
  probability?: number;
  /** The fault meets the next `count` matching requests, then is spent. */
  count?: number;
  /** A `slow` fault's delay before the request is answered. */
  delayMs?: number;
  /** The HTTP status of the fault's answer, where the kind has several. */
  status?: number;
}

/** The numeric settings an emulator may add to the common ones. */
export type ExtraFaultSetting = 'retryAfter' | 'resetSeconds';

/** One emulator's faults. */
export interface FaultRules<S extends FaultSpecBase> {
  kinds: readonly S['kind'][];
  /** The field holding the text a request's target must contain (`path`, `operation`) and its short names. */
  match: { field: keyof S & string; names: readonly string[] };
  extras: readonly ExtraFaultSetting[];
  statuses: readonly number[];
}

interface NumberRule {
  min: number;
  max: number;
  integer: boolean;
}

const NUMBER_RULES: Readonly<Record<'probability' | 'count' | 'delayMs' | ExtraFaultSetting, NumberRule>> = {
  probability: { min: 0, max: 1, integer: false },
  count: { min: 1, max: 1_000_000, integer: true },
  delayMs: { min: 0, max: 120_000, integer: true },
  retryAfter: { min: 0, max: 86_400, integer: true },
  resetSeconds: { min: 0, max: 86_400, integer: true },
};

/** The fault checked against `rules` (a copy); `field` names it in errors (`faults[0]`). */
export function validateFault<S extends FaultSpecBase>(rules: FaultRules<S>, fault: unknown, field: string): S {
  if (typeof fault !== 'object' || fault === null) throw new ValidationError(field, 'expected an object with a kind');
  const f = fault as Record<string, unknown>;
  if (!(rules.kinds as readonly unknown[]).includes(f.kind)) {
    throw new ValidationError(`${field}.kind`, `unknown fault "${String(f.kind)}" (one of ${rules.kinds.join(', ')})`);
  }
  for (const key of ['probability', 'count', 'delayMs', ...rules.extras] as const) {
    checkNumber(f[key], NUMBER_RULES[key], `${field}.${key}`);
  }
  if (f.status !== undefined && !rules.statuses.includes(f.status as number)) {
    throw new ValidationError(`${field}.status`, `expected ${listOr(rules.statuses)}`);
  }
  if (f.probability !== undefined && f.count !== undefined) {
    throw new ValidationError(field, 'give probability or count, not both');
  }
  return { ...f } as unknown as S;
}

function checkNumber(v: unknown, rule: NumberRule, field: string): void {
  if (v === undefined) return;
  if (typeof v !== 'number' || !(v >= rule.min && v <= rule.max) || (rule.integer && !Number.isInteger(v))) {
    throw new ValidationError(
      field,
      `expected ${rule.integer ? 'an integer' : 'a number'} from ${rule.min} to ${rule.max}`,
    );
  }
}

function listOr(values: readonly number[]): string {
  const last = String(values[values.length - 1]);
  return values.length === 1 ? last : `${values.slice(0, -1).join(', ')} or ${last}`;
}

/** `--faults` text (a JSON array, or `kind[:key=value…]` entries separated by commas) → checked specs. */
export function parseFaultText<S extends FaultSpecBase>(rules: FaultRules<S>, text: string): S[] {
  const trimmed = text.trim();
  const specs: unknown[] = trimmed.startsWith('[')
    ? jsonArray(trimmed)
    : trimmed
        .split(',')
        .filter((s) => s.trim() !== '')
        .map((entry, i) => parseEntry(rules, entry.trim(), `faults[${i}]`));
  return specs.map((f, i) => validateFault(rules, f, `faults[${i}]`));
}

function jsonArray(text: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ValidationError('faults', 'not valid JSON', { cause });
  }
  if (!Array.isArray(parsed)) throw new ValidationError('faults', 'expected a JSON array');
  return parsed;
}

/** The names a `key=value` setting may use, each → the spec's field. */
function settingNames<S extends FaultSpecBase>(rules: FaultRules<S>): Record<string, string> {
  const names: Record<string, string> = {
    p: 'probability',
    probability: 'probability',
    count: 'count',
    status: 'status',
    delay: 'delayMs',
    delayMs: 'delayMs',
  };
  for (const name of [rules.match.field, ...rules.match.names]) names[name] = rules.match.field;
  for (const extra of rules.extras) names[extra] = extra;
  return names;
}

function parseEntry<S extends FaultSpecBase>(rules: FaultRules<S>, entry: string, field: string): unknown {
  const names = settingNames(rules);
  const [kind, ...pairs] = entry.split(':');
  const spec: Record<string, unknown> = { kind };
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const key = eq > 0 && Object.hasOwn(names, name) ? names[name] : undefined;
    if (!key) throw new ValidationError(field, `unknown setting "${pair}" (${Object.keys(names).join(', ')})`);
    const raw = pair.slice(eq + 1);
    spec[key] = key === rules.match.field ? raw : raw.trim() === '' ? Number.NaN : Number(raw);
  }
  return spec;
}
