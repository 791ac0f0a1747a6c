/**
 * Injected faults. Each applies to requests whose path contains `path` (all when absent): to the
 * next `count` of them, or to each with `probability` (a generator seeded from the emulator's
 * seed, so a run is repeatable), or to every one when neither is given.
 */
import { ValidationError } from '../../errors.js';
import { FAULT_KINDS, type FaultKind, type FaultSpec } from './options.js';
import { FaultDeck } from '../core/faultDeck.js';

export class FaultInjector extends FaultDeck<FaultSpec> {
  constructor(seed: number, faults: readonly FaultSpec[] = []) {
    super(seed, validateFault, (f, target) => f.path === undefined || target.includes(f.path), faults);
  }
}

const SERVER_STATUSES = [500, 502, 503, 504];

function validateFault(f: FaultSpec, field: string): FaultSpec {
  if (!(FAULT_KINDS as readonly string[]).includes(f.kind)) {
    throw new ValidationError(`${field}.kind`, `unknown fault "${String(f.kind)}" (one of ${FAULT_KINDS.join(', ')})`);
  }
  const num = (key: keyof FaultSpec, min: number, max: number, integer: boolean): void => {
    const v = f[key];
    if (v === undefined) return;
    if (typeof v !== 'number' || !(v >= min && v <= max) || (integer && !Number.isInteger(v))) {
      throw new ValidationError(
        `${field}.${key}`,
        `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`,
      );
    }
  };
  num('probability', 0, 1, false);
  num('count', 1, 1_000_000, true);
  num('retryAfter', 0, 86_400, true);
  num('delayMs', 0, 120_000, true);
  num('resetSeconds', 0, 86_400, true);
  if (f.status !== undefined && !SERVER_STATUSES.includes(f.status)) {
    throw new ValidationError(`${field}.status`, 'expected 500, 502, 503 or 504');
  }
  if (f.probability !== undefined && f.count !== undefined) {
    throw new ValidationError(field, 'give probability or count, not both');
  }
  return { ...f };
}

const KEYS: Record<string, keyof FaultSpec> = {
  p: 'probability',
  probability: 'probability',
  count: 'count',
  path: 'path',
  retryAfter: 'retryAfter',
  status: 'status',
  delay: 'delayMs',
  delayMs: 'delayMs',
  resetSeconds: 'resetSeconds',
};

/**
 * `--faults` text: a JSON array of FaultSpec, or comma-separated `kind[:key=value…]`, e.g.
 * `secondary-limit:count=2:retryAfter=3,server-error:p=0.05:status=503,slow:delay=200:path=/pulls`.
 */
export function parseFaults(text: string): FaultSpec[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (err) {
      throw new ValidationError('faults', 'not valid JSON', { cause: err });
    }
    if (!Array.isArray(parsed)) throw new ValidationError('faults', 'expected a JSON array');
    return parsed.map((f, i) => validateFault(f as FaultSpec, `faults[${i}]`));
  }
  return trimmed
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((entry, i) => validateFault(parseEntry(entry.trim(), `faults[${i}]`), `faults[${i}]`));
}

function parseEntry(entry: string, field: string): FaultSpec {
  const [kind, ...pairs] = entry.split(':');
  const spec: FaultSpec = { kind: kind as FaultKind };
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = KEYS[pair.slice(0, eq)];
    if (eq < 1 || !key) throw new ValidationError(field, `unknown setting "${pair}" (${Object.keys(KEYS).join(', ')})`);
    const raw = pair.slice(eq + 1);
    if (key === 'path') spec.path = raw;
    else if (key !== 'kind') spec[key] = raw.trim() === '' ? Number.NaN : Number(raw);
  }
  return spec;
}
