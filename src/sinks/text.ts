/**
 * Text the sinks can store. PostgreSQL text is UTF-8 and its jsonb refuses a `\ud800` escape, so
 * an unpaired UTF-16 surrogate (a high one not followed by a low one, a low one not preceded by a
 * high one) is replaced with U+FFFD before a value is bound; surrogate pairs (emoji) are kept.
 */

/** One unpaired surrogate: code units, so the pattern runs without the `u` flag on purpose. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `text` with every unpaired surrogate replaced by U+FFFD; the same string when it has none. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd');
}

/**
 * `value` as JSON text with `clean` applied to every string inside it, object keys included.
 * Returns undefined where `JSON.stringify` does (a function, `undefined`); throws what it throws.
 */
export function cleanJson(value: unknown, clean: (text: string) => string): string | undefined {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'string') return clean(v);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const entries = Object.entries(v);
    if (entries.every(([k]) => clean(k) === k)) return v;
    return Object.fromEntries(entries.map(([k, inner]) => [clean(k), inner]));
  });
}
