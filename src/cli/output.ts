/** What the CLI prints: JSON or aligned tables on stdout, one-line errors on stderr. */
import { SyncRelayError, ValidationError } from '../errors.js';

/** Exit status of a command that failed. */
export const EXIT_FAILURE = 1;
/** Exit status of `runs show --wait` when the run is still not terminal. */
export const EXIT_TIMEOUT = 3;

/** An error the CLI reports as-is, with its own exit status. */
export class CliError extends SyncRelayError {
  constructor(
    message: string,
    readonly exitCode = EXIT_FAILURE,
    options?: { cause?: unknown },
  ) {
    super('cli_error', message, options);
  }
}

const CONTROL = /\p{Cc}/gu;
const NAMED_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `text` with every control character (C0, DEL, C1) shown as an escape — `\n`, `\r`, `\t`, else
 * `\xHH` — so a stored name or message can neither move the cursor nor forge a line.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => NAMED_ESCAPES[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** {@link printable} line by line: for text the CLI itself broke into lines (a table, a summary). */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}

/** Collapses whitespace and newlines so a message fits on one line, and escapes control characters. */
export function oneLine(text: string): string {
  return printable(text.replace(/\s*\n\s*/g, ' ').trim());
}

/**
 * The reason an error gives, on one line: its message, plus its cause's when the message alone
 * says little (a wrapped driver error); errors with an empty message (AggregateError from a
 * refused connection) fall back to their first inner error or their code.
 */
export function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return oneLine(String(err));
  let text = err.message;
  if (!text && err instanceof AggregateError && err.errors.length > 0) text = reasonOf(err.errors[0]);
  if (!text) text = (err as { code?: string }).code ?? err.name;
  const cause = err.cause;
  if (!(err instanceof ValidationError) && cause instanceof Error) {
    const inner = reasonOf(cause);
    if (inner && !text.includes(inner)) text = `${text}: ${inner}`;
  }
  return oneLine(text);
}

/** The one stderr line for a failure. */
export function errorLine(err: unknown): string {
  return `syncrelay: ${reasonOf(err)}`;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Text lines on stdout, control characters escaped (line breaks kept). Wrap values a person chose
 * (names, keys, messages) in {@link printable} too, so they cannot break a line either.
 */
export function printLine(text = ''): void {
  process.stdout.write(`${printableLines(text)}\n`);
}

/** Informational lines for a person (stderr, so stdout stays data), escaped like {@link printLine}. */
export function note(text: string): void {
  process.stderr.write(`${printableLines(text)}\n`);
}

export interface Column<R> {
  header: string;
  value: (row: R) => string | number | null | undefined;
  align?: 'left' | 'right';
}

/** Renders rows as an aligned text table (header first); `(none)` when empty. Cells are {@link printable}. */
export function formatTable<R>(rows: readonly R[], columns: readonly Column<R>[], indent = ''): string {
  if (rows.length === 0) return `${indent}(none)`;
  const cells = rows.map((r) => columns.map((c) => cellText(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    indent +
    values
      .map((v, i) => (columns[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

export function printTable<R>(rows: readonly R[], columns: readonly Column<R>[]): void {
  printLine(formatTable(rows, columns));
}

/** `key  value` lines with the keys aligned; values are {@link printable}. */
export function formatPairs(
  pairs: readonly (readonly [string, string | number | null | undefined])[],
  indent = '',
): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${indent}${k.padEnd(width)}  ${cellText(v)}`.trimEnd()).join('\n');
}

function cellText(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '-';
  return printable(String(v));
}

/** An ISO time, or `-`. */
export function isoOrDash(d: Date | string | null | undefined): string {
  if (!d) return '-';
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

/** A duration in ms as `850 ms`, `12.4 s` or `3 min 05 s`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** Milliseconds between two times (null when either is missing). */
export function elapsedMs(from: Date | null | undefined, to: Date | null | undefined): number | null {
  if (!from || !to) return null;
  return new Date(to).getTime() - new Date(from).getTime();
}
