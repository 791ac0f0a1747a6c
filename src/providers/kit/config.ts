/**
 * The rules every provider's config and sources follow, so a provider's config.ts lists only its
 * keys, its URL's rules and its source format:
 * - `parseSettings`: the config is an object of known keys only, each read by its own rule;
 * - `checkUrl`: an http(s) URL of at most `MAX_URL` characters, without credentials, query or
 *   fragment, that the outbound policy (outbound.ts) lets requests go to; a path allowed or not;
 * - `budgetShare`: the share of the credential's rate-limit budget the integration may use;
 * - `sourceKeys`: a source key checked when stored (`ValidationError`) and when a unit reads it
 *   (`NonRetryableError` `not_found`).
 * Every error names the field (`config.<key>`, `source`).
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import { processOutboundPolicy, type OutboundPolicy } from './outbound.js';

/** The longest URL a config may hold. */
export const MAX_URL = 2048;

/** How each setting of a provider's config is read (absent: undefined), by key, in the order shown. */
export type SettingReaders<C> = { [K in keyof C]: (raw: unknown) => C[K] };

/**
 * `config` read by `readers`: an object holding only their keys (`provider`, e.g. `GitHub`, names
 * the settings in the message); each reader throws `ValidationError` naming `config.<key>`.
 */
export function parseSettings<C>(config: unknown, provider: string, readers: SettingReaders<C>): C {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ValidationError('config', 'must be an object');
  }
  const c = config as Record<string, unknown>;
  const keys = Object.keys(readers);
  for (const key of Object.keys(c)) {
    if (!keys.includes(key)) {
      throw new ValidationError(`config.${key}`, `is not a ${provider} setting (known: ${keys.join(', ')})`);
    }
  }
  const out: Partial<C> = {};
  for (const key of keys as (keyof C & string)[]) out[key] = readers[key](c[key]);
  return out as C;
}

/** What a config URL may be (its scheme and host: as the outbound policy allows). */
export interface UrlRule {
  /** Whether it may have a path (false: the site root only). */
  path: boolean;
  /** Shown with the length rule, e.g. `https://<site>.atlassian.net`. */
  example?: string;
}

/**
 * `raw` checked as the URL at `field` under `outbound` (its scheme, and its host when an IP literal or
 * `localhost`); throws `ValidationError` naming `field` for the first problem.
 */
export function checkUrl(
  raw: unknown,
  field: string,
  rule: UrlRule,
  outbound: OutboundPolicy = processOutboundPolicy(),
): { text: string; url: URL } {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URL) {
    const example = rule.example ? ` (${rule.example})` : '';
    throw new ValidationError(field, `must be a URL of 1–${MAX_URL} characters${example}`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new ValidationError(field, 'is not a URL', { cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ValidationError(field, 'must use https');
  if (url.username || url.password) throw new ValidationError(field, 'must not carry credentials');
  if (url.search || url.hash) throw new ValidationError(field, 'must not have a query or fragment');
  if (!rule.path && url.pathname !== '/' && url.pathname !== '') {
    throw new ValidationError(field, 'must be the site root, no path');
  }
  const refused = outbound.urlProblem(url);
  if (refused !== null) throw new ValidationError(field, refused);
  return { text: raw, url };
}

/** `config.budgetShare`: the share of the credential's budget, 0 < x ≤ 1. @default 1 */
export function budgetShare(raw: unknown): number {
  if (raw === undefined) return 1;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0 || raw > 1) {
    throw new ValidationError('config.budgetShare', 'must be a number greater than 0 and at most 1');
  }
  return raw;
}

/** A provider's source format. */
export interface SourceRule<S> {
  /** What a source is, e.g. `a Jira project key`. */
  what: string;
  /** Why `source` is not one (the message a stored source fails with), or null when it is. */
  problem: (source: string) => string | null;
  /** A valid source as the provider's units take it. */
  parse: (source: string) => S;
}

/** A source format's two checks: when a source is stored, and when a unit reads it. */
export interface SourceKeys<S> {
  /** Throws `ValidationError` naming `field` unless `source` is a valid source. */
  validate: (source: string, field?: string) => void;
  /** A unit's source, parsed; none, or an invalid one, cannot be found (`not_found`, naming `subject`). */
  of: (source: string | null, subject: string) => S;
}

/** The checks of the source format `rule`. Sources are shown cut to 40 characters. */
export function sourceKeys<S>(rule: SourceRule<S>): SourceKeys<S> {
  return {
    validate: (source, field = 'source') => {
      const problem = typeof source === 'string' ? rule.problem(source) : `must be ${rule.what}`;
      if (problem !== null) throw new ValidationError(field, `${problem}, got ${shown(source)}`);
    },
    of: (source, subject) => {
      if (source === null || rule.problem(source) !== null) {
        const named = source === null ? 'no source' : shown(source);
        throw new NonRetryableError(`${subject}: source ${named} is not ${rule.what}`, 'not_found');
      }
      return rule.parse(source);
    },
  };
}

function shown(source: unknown): string {
  return typeof source === 'string' ? JSON.stringify(source.slice(0, 40)) : typeof source;
}

/** Sources that are keys matching `pattern`: `what` names one, `format` says how one looks. */
export function keySources(what: string, pattern: RegExp, format: string): SourceKeys<string> {
  return sourceKeys({
    what,
    problem: (source) => (pattern.test(source) ? null : `must be ${what} (${format})`),
    parse: (source) => source,
  });
}
