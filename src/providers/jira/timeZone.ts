/**
 * Time in Jira: its timestamps (`2026-03-02T12:00:00.000+0000`) and JQL's wall-clock dates
 * (`"2026-03-02 13:00"`), which Jira reads in the calling user's time zone, to the minute.
 */

const MINUTE = 60_000;

/** Epoch ms of a Jira timestamp (offset with or without a colon); NaN when it is not one. */
export function parseJiraTime(text: string | null | undefined): number {
  if (typeof text !== 'string') return Number.NaN;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})$/.exec(text.trim());
  if (!m) return Number.NaN;
  const zone = m[2] === 'Z' ? 'Z' : `${m[2]!.slice(0, 3)}:${m[2]!.slice(-2)}`;
  return Date.parse(m[1]! + zone);
}

/** A Date of a Jira timestamp, or null. */
export function jiraDate(text: string | null | undefined): Date | null {
  const ms = parseJiraTime(text);
  return Number.isFinite(ms) ? new Date(ms) : null;
}

/** `2026-03-02T12:00:00.000+0000`: how Jira writes an instant (in UTC here). */
export function formatJiraTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+0000');
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether `timeZone` is an IANA zone this runtime knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock fields of `ms` in `timeZone`, as if they were UTC (epoch ms). */
function wallAsUtc(ms: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(ms))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return Date.UTC(parts.year!, parts.month! - 1, parts.day, parts.hour, parts.minute, parts.second);
}

/** The zone's offset from UTC at instant `ms`, in ms (whole seconds). */
export function zoneOffset(ms: number, timeZone: string): number {
  const floored = Math.floor(ms / 1000) * 1000;
  return wallAsUtc(floored, timeZone) - floored;
}

/** `yyyy-MM-dd HH:mm`: the JQL date of the minute holding `ms`, on the wall clock of `timeZone`. */
export function jqlMinute(ms: number, timeZone: string): string {
  const wall = new Date(wallAsUtc(Math.floor(ms / MINUTE) * MINUTE, timeZone)).toISOString();
  return `${wall.slice(0, 10)} ${wall.slice(11, 16)}`;
}

/**
 * The instant a JQL wall-clock date (`yyyy-MM-dd HH:mm` or `yyyy-MM-dd`) names in `timeZone`
 * (the earlier one when a clock change repeats it); NaN when it is not such a date.
 */
export function jqlWallToInstant(text: string, timeZone: string): number {
  const m = /^(\d{4})[-/](\d{2})[-/](\d{2})(?: (\d{2}):(\d{2}))?$/.exec(text);
  if (!m) return Number.NaN;
  const wall = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +(m[4] ?? 0), +(m[5] ?? 0));
  if (!Number.isFinite(wall)) return Number.NaN;
  const first = wall - zoneOffset(wall - 86_400_000, timeZone);
  const second = wall - zoneOffset(wall + 86_400_000, timeZone);
  const fits = [first, second].filter((t) => wallAsUtc(t, timeZone) === wall).sort((a, b) => a - b);
  return fits[0] ?? first;
}
