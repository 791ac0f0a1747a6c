/**
 * What a provider's answer may show. A failed answer's body is the provider's (or whoever answers on
 * its origin): it may echo the credential the request carried. Before any of it is stored, shown or
 * logged it is redacted: every form of the integration's credential the client knows (`credentialForms`,
 * `authorizationForms`) and every string shaped like a well-known token, whoever's it is, read
 * `[redacted]`. `errorSummary` also strips control characters and bounds the length.
 */

/** What a redacted value reads. */
export const REDACTED = '[redacted]';

/** The longest summary of a provider's error that is stored and shown. */
export const SUMMARY_MAX = 200;

/** Forms shorter than this are not looked for: they would redact ordinary words and hide nothing. */
const MIN_FORM = 4;

/** The characters fixed by `bytes` alone, base64-encoded at each of the three offsets in a larger buffer. */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const first = Math.ceil(k / 3);
    const last = Math.floor((k + bytes.length) / 3);
    if (last > first) cores.push(encoded.slice(first * 4, last * 4));
  }
  return cores;
}

const base64url = (s: string): string => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** The encodings one secret may take in a text: as is, base64 (at any offset), base64url, hex, URL, JSON. */
function encodings(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const b64 = bytes.toString('base64');
  const cores = base64Cores(bytes);
  const base64s = [b64, ...cores];
  return [
    secret,
    ...base64s,
    ...base64s.map(base64url),
    ...base64s.map(encodeURIComponent),
    bytes.toString('hex'),
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
  ];
}

/** Longest first, without duplicates or forms too short to look for. */
function tidy(forms: readonly string[]): string[] {
  return [...new Set(forms)].filter((f) => f.length >= MIN_FORM).sort((a, b) => b.length - a.length);
}

/**
 * Every form of `credential` a text may carry: the credential and, for one given with its scheme
 * (`Bearer x`, `token x`, `Basic x`), the value after it; for `a:b` (Jira's `email:token`) also `b`;
 * each of them as is, base64 (also inside a longer base64 text, as in a Basic header), base64url,
 * hex, URL-encoded and JSON-escaped.
 */
export function credentialForms(credential: string): string[] {
  const secrets = new Set<string>();
  const add = (s: string): void => {
    const v = s.trim();
    if (v === '') return;
    secrets.add(v);
    const schemed = /^(?:bearer|token|basic)\s+(\S+)$/i.exec(v);
    if (schemed?.[1]) add(schemed[1]);
    const colon = v.indexOf(':');
    if (colon > 0 && colon < v.length - 1) secrets.add(v.slice(colon + 1));
  };
  add(credential);
  return tidy([...secrets].flatMap(encodings));
}

/**
 * The forms of the credential behind an Authorization header value: for `Basic x`, those of what `x`
 * decodes to (e.g. `email:token`) and of `x` itself; for any other, those of the value (`credentialForms`).
 */
export function authorizationForms(header: string): string[] {
  const basic = /^basic\s+(\S+)$/i.exec(header.trim());
  if (!basic?.[1]) return credentialForms(header);
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  return tidy([...credentialForms(header), ...credentialForms(decoded)]);
}

/** Between a scheme or key and its value: `Bearer x`, `token=x`, `"token": "x"`, `Bearer%20x`. */
const GAP = String.raw`(["']?\s*[:=]\s*["']?|\s+|%20|\+)`;

/** Strings shaped like well-known tokens, whoever's they are, and what each is replaced by. */
const TOKEN_SHAPES: readonly (readonly [RegExp, string])[] = [
  [/gh[pousr]_[A-Za-z0-9_-]{6,}/g, REDACTED], // GitHub: personal, OAuth, user-to-server, server, refresh
  [/github_pat_[A-Za-z0-9_]{6,}/g, REDACTED], // GitHub fine-grained personal access token
  [/lin_(?:api|oauth)_[A-Za-z0-9_-]{6,}/g, REDACTED], // Linear API key, OAuth token
  [/ATATT[A-Za-z0-9_=-]{8,}/g, REDACTED], // Atlassian API token
  // A JWT (a GitHub App's, an OAuth access token).
  [/eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, REDACTED],
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, REDACTED], // a PEM key
  // A credential after its scheme or key: a long value holding a digit (`Bearer eyJ…`, `token=0123abcd…`).
  [
    new RegExp(String.raw`(?<![A-Za-z])(bearer|token)${GAP}(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{12,}`, 'gi'),
    `$1$2${REDACTED}`,
  ],
];

/** `Basic x`: redacted when `x` decodes to user:secret (`isBasicValue`). */
const BASIC_VALUE = new RegExp(String.raw`(?<![A-Za-z])(basic)${GAP}([A-Za-z0-9+/_-]{4,}={0,2})`, 'gi');

/** A `Basic` value: base64 (or base64url) of printable text holding a `:` (user:secret). */
function isBasicValue(v: string): boolean {
  const decoded = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
  return /^[\x20-\x7e]+$/.test(decoded) && decoded.includes(':');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * `text` with every one of `forms` (credentialForms: longest first; matched ignoring case) and
 * every string shaped like a well-known token (ghp_…, github_pat_…, lin_api_…, ATATT…, a JWT, a PEM
 * private key, `Bearer x`, `token x`, `Basic x`) replaced by `[redacted]`.
 */
export function redact(text: string, forms: readonly string[]): string {
  let out = text;
  const known = tidy(forms);
  if (known.length > 0) out = out.replace(new RegExp(known.map(escapeRegExp).join('|'), 'gi'), REDACTED);
  for (const [shape, replacement] of TOKEN_SHAPES) out = out.replace(shape, replacement);
  out = out.replace(BASIC_VALUE, (m: string, scheme: string, gap: string, value: string) =>
    isBasicValue(value) ? `${scheme}${gap}${REDACTED}` : m,
  );
  return out.replace(REDACTED_RUN, REDACTED);
}

/** Redactions side by side (one secret inside another's encoding) read as one. */
const REDACTED_RUN = /(?:\[redacted\]){2,}/g;

/** A terminal's control sequence (ESC [ … or CSI …, e.g. a colour): removed whole. */
const CONTROL_SEQUENCE = /(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]/g;

/**
 * Control and format characters (C0, C1, DEL, zero-width and bidirectional marks…) and terminal
 * control sequences: removed before redacting, so none of them hides a credential by splitting it.
 * Line breaks and tabs become spaces.
 */
function withoutControls(text: string): string {
  return text
    .replace(CONTROL_SEQUENCE, '')
    .replace(/[\t\n\r\u2028\u2029]/g, ' ')
    .replace(/[\p{Cc}\p{Cf}]/gu, '');
}

/**
 * A provider's words as they may be stored and shown: control characters stripped, every form of the
 * credential and every token-shaped string redacted, whitespace collapsed, at most `max` characters
 * (cut with `…`; never in the middle of `[redacted]`).
 */
export function errorSummary(text: string, forms: readonly string[], max = SUMMARY_MAX): string {
  const clean = redact(withoutControls(text), forms).replace(/\s+/g, ' ').trim();
  if (clean.length <= max) return clean;
  let cut = clean.slice(0, Math.max(0, max - 1));
  const open = cut.lastIndexOf('[');
  if (open >= 0 && REDACTED.startsWith(cut.slice(open)) && cut.slice(open) !== REDACTED) cut = cut.slice(0, open);
  return `${cut.trimEnd()}…`;
}

/** A body as it may be logged (at debug level only): controls stripped, redacted, at most `max` characters. */
export function redactedBody(body: unknown, forms: readonly string[], max = 16_384): string {
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    try {
      text = JSON.stringify(body) ?? '';
    } catch {
      text = String(body);
    }
  }
  const clean = redact(withoutControls(text), forms);
  return clean.length <= max ? clean : `${clean.slice(0, max)}…`;
}

/**
 * Redacts, in place, the message and stack of `err` and of each of its causes (an error made from
 * a provider's answer: the last guard before it is stored, shown or logged).
 */
export function redactError<E>(err: E, forms: readonly string[]): E {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    e.message = redact(e.message, forms);
    if (typeof e.stack === 'string') e.stack = redact(e.stack, forms);
  }
  return err;
}
