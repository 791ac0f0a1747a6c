/**
 * Cron math for schedules (croner, no I/O): five-field expressions or nicknames such as
 * `@hourly`, evaluated in an IANA time zone, so `0 9 * * *` in Europe/Berlin is 09:00 local time
 * on both sides of a daylight-saving change.
 */
import { Cron } from 'croner';
import { ValidationError } from '../errors.js';

/** Longest cron expression accepted. */
export const MAX_CRON_LENGTH = 200;

/** `minute hour day-of-month month day-of-week`, or a nickname (`@hourly`, `@daily`, `@weekly` …). */
const SHAPE_RE = /^(@[a-z]+|\S+(\s+\S+){4})$/i;

/**
 * The IANA name of `timezone` as the runtime spells it (`europe/berlin` → `Europe/Berlin`);
 * throws ValidationError('timezone') for anything else (offsets such as `+01:00` included).
 */
export function normalizeTimezone(timezone: string): string {
  const text = timezone.trim();
  if (text === '' || text.length > 100)
    throw new ValidationError('timezone', 'must be an IANA time zone such as Europe/Berlin or UTC');
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: text }).resolvedOptions().timeZone;
  } catch (cause) {
    throw new ValidationError(
      'timezone',
      `unknown time zone "${text}" (use an IANA name such as Europe/Berlin or UTC)`,
      { cause },
    );
  }
}

/** A parsed schedule: croner's job object, never started (no timer, no callback). */
function cronOf(cron: string, timezone: string): Cron {
  const text = cron.trim();
  if (text.length > MAX_CRON_LENGTH) throw new ValidationError('cron', `must be at most ${MAX_CRON_LENGTH} characters`);
  // croner also reads an ISO time as a one-off date; a schedule must be a recurring pattern.
  if (!SHAPE_RE.test(text)) {
    throw new ValidationError(
      'cron',
      'must have five fields (minute hour day-of-month month day-of-week), e.g. "0 * * * *", ' +
        'or be a nickname such as @hourly',
    );
  }
  try {
    return new Cron(text, { timezone, mode: '5-part', paused: true });
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message.replace(/^CronPattern:\s*/, '') : String(cause);
    throw new ValidationError('cron', `"${text}" is not a valid cron expression: ${reason}`, { cause });
  }
}

/**
 * Checks a cron expression and time zone together and answers their canonical forms; throws
 * ValidationError naming `cron` or `timezone`, also when the expression never fires again after `now`.
 */
export function validateSchedule(cron: string, timezone: string, now: Date): { cron: string; timezone: string } {
  const tz = normalizeTimezone(timezone);
  const text = cron.trim().replace(/\s+/g, ' ');
  if (nextSlot(text, tz, now) === null) throw new ValidationError('cron', `"${text}" never matches a future time`);
  return { cron: text, timezone: tz };
}

/** The first slot strictly after `after` (whole seconds), or null when there is none. */
export function nextSlot(cron: string, timezone: string, after: Date): Date | null {
  return cronOf(cron, timezone).nextRun(after);
}
