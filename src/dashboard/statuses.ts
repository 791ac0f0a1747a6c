/**
 * The domain's status lists the dashboard page needs, served as an ES module
 * (`/dashboard/statuses.js`) so the page's script spells no status itself.
 */
import {
  JOB_RUN_STATUSES,
  SYNC_MODES,
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  TRIGGERS,
  UNIT_STATUSES,
} from '../domain/statuses.js';

/** Export name → list, as the page imports them. */
export const DASHBOARD_LISTS = {
  JOB_RUN_STATUSES,
  UNIT_STATUSES,
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  SYNC_MODES,
  TRIGGERS,
} as const satisfies Record<string, readonly string[]>;

/** The module's source: one frozen array per list. */
export function statusesModule(): string {
  const exports = Object.entries(DASHBOARD_LISTS).map(
    ([name, list]) => `export const ${name} = Object.freeze(${JSON.stringify(list)});`,
  );
  return ['// The status lists of src/domain/statuses.ts, as the server serves them.', ...exports, ''].join('\n');
}
