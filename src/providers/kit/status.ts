/**
 * The table lookup the providers' status rules share: a provider's value matched ignoring case,
 * surrounding spaces and the kind of apostrophe.
 */
import { ValidationError } from '../../errors.js';
import type { WorkItemStatus } from '../../sdk/normalized.js';

/** Lower case, trimmed, typographic apostrophes as plain ones ("Won’t Do" → "won't do"). */
export function statusKey(value: string): string {
  return value
    .trim()
    .toLowerCase()
    .replace(/\u2019/g, "'");
}

/** The status `table` maps `value` to; throws `ValidationError` naming `field` for a value it lacks. */
export function lookupStatus(
  table: Readonly<Record<string, WorkItemStatus>>,
  value: string,
  field: string,
): WorkItemStatus {
  const k = typeof value === 'string' ? statusKey(value) : '';
  if (!Object.hasOwn(table, k)) {
    throw new ValidationError(field, `expected one of ${Object.keys(table).join(', ')}, got ${JSON.stringify(value)}`);
  }
  return table[k]!;
}
