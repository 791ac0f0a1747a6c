/**
 * Reading response headers the same way whatever carries them: a fetch `Headers` object, or the
 * plain record Octokit hands back (names in lower case, values strings or numbers).
 */

/** A response's headers: fetch's `Headers`, or a record keyed by lower-case name. */
export type HeaderSource = Headers | Readonly<Record<string, string | number | undefined>>;

/** Header `name` (lower case) as text; undefined when absent. */
export function headerOf(h: HeaderSource | undefined, name: string): string | undefined {
  if (h === undefined) return undefined;
  if (h instanceof Headers) return h.get(name) ?? undefined;
  const v = h[name];
  return v === undefined ? undefined : String(v);
}

/** Header `name` as a finite number; null when absent, blank or not a number. */
export function numberHeader(h: HeaderSource | undefined, name: string): number | null {
  const raw = headerOf(h, name);
  if (raw === undefined || raw.trim() === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}

/** Header `name` as a date (any form `Date.parse` reads, e.g. ISO-8601); null when absent or unreadable. */
export function timeHeader(h: HeaderSource | undefined, name: string): Date | null {
  const raw = headerOf(h, name);
  const ms = raw === undefined ? Number.NaN : Date.parse(raw.trim());
  return Number.isFinite(ms) ? new Date(ms) : null;
}
