/**
 * The Jira emulator's clock text, written apart from the provider's own reading of it (a shared
 * module would hide a bug both sides made): Jira's timestamps (`2026-03-02T12:00:00.000+0000`) and
 * the instant a JQL wall-clock date names in the calling user's time zone, read through the
 * runtime's zone offsets (`Intl`, `timeZoneName: 'longOffset'`).
 */

const DAY = 86_400_000;

/** The custom field Jira Cloud keeps an issue's sprints in. */
export const SPRINT_FIELD = 'customfield_10020';

/** `2026-03-02T12:00:00.000+0000`: how Jira writes an instant (in UTC here). */
export function jiraTimestamp(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, -1)}+0000`;
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

function offsetFormat(timeZone: string): Intl.DateTimeFormat {
  let f = offsetFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
    offsetFormats.set(timeZone, f);
  }
  return f;
}

/** Whether the runtime knows `timeZone` as an IANA zone. */
export function knownTimeZone(timeZone: string): boolean {
  try {
    offsetFormat(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at instant `ms`, in ms (`GMT+05:30` → 19 800 000; `GMT` → 0). */
function offsetAt(ms: number, timeZone: string): number {
  const name = offsetFormat(timeZone)
    .formatToParts(new Date(ms))
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(name ?? '');
  if (!m || !m[1]) return 0;
  const sign = m[1] === '-' ? -1 : 1;
  return sign * ((+m[2]! * 60 + +m[3]!) * 60 + +(m[4] ?? 0)) * 1000;
}

/**
 * The instant a JQL date (`yyyy-MM-dd HH:mm`, `yyyy-MM-dd`, `/` also between the date's parts)
 * names on the wall clock of `timeZone`: the earlier one when a clock change repeats the time, the
 * time as read before the change when one skips it; NaN when the text is no such date.
 */
export function jqlDateInstant(text: string, timeZone: string): number {
  const m = /^(\d{4})[-/](\d{2})[-/](\d{2})(?: (\d{2}):(\d{2}))?$/.exec(text);
  if (!m) return Number.NaN;
  const wall = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +(m[4] ?? 0), +(m[5] ?? 0));
  if (!Number.isFinite(wall)) return Number.NaN;
  const offsets = [offsetAt(wall - DAY, timeZone), offsetAt(wall, timeZone), offsetAt(wall + DAY, timeZone)];
  const fits = offsets.map((o) => wall - o).filter((t) => offsetAt(t, timeZone) === wall - t);
  return fits.length > 0 ? Math.min(...fits) : wall - offsets[0]!;
}
