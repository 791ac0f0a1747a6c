/**
 * One org's rate-limit budgets as an operator reads them (API, CLI, dashboard): per budget, its
 * figures, its credential (kind and label, the integrations using it; never a secret), its state
 * now, limit responses and deferrals over the last hour and day, and the units waiting on it.
 */
import type { Db } from '../db/types.js';
import { budgetKeyOf, describeBudgetHolder, type BudgetCredentialKind } from '../domain/rateBudgetKeys.js';
import {
  countRateLimitedUnits,
  listBudgetReportRows,
  listUnitsWaitingOnLimits,
  type BudgetReportRow,
  type LimitedUnitsRow,
  type WaitingUnitRow,
} from './rateBudgetReport.js';

const HOUR_MS = 3_600_000;
/** Waiting units listed per budget (the count is exact). */
export const WAITING_UNITS_SHOWN = 20;

/** `limited`: a limit response's lift time is ahead; `exhausted`: nothing remains before the reset. */
export type BudgetState = 'limited' | 'exhausted' | 'ok' | 'unknown';

export interface BudgetView {
  key: string;
  provider: string;
  credential: {
    holder: string;
    kind: BudgetCredentialKind;
    label: string;
    integrations: { id: string; name: string }[];
  };
  state: BudgetState;
  remaining: number | null;
  limit: number | null;
  reset_at: Date | null;
  limited_until: Date | null;
  observed_at: Date;
  limit_responses: { last_hour: number; last_day: number };
  deferrals: { last_hour: number; last_day: number };
  waiting: { units: number; next_due_at: Date | null; shown: WaitingUnitRow[] };
}

export interface BudgetViewQuery {
  orgId: string;
  provider: string | null;
  now: Date;
  /** SYNC_RATE_LIMIT_MAX_WAIT_SECONDS in ms: a unit waiting on a limit was first limited within it. */
  maxWaitMs: number;
}

/** The state a budget is in at `now`. */
export function budgetState(
  r: Pick<BudgetReportRow, 'remaining' | 'reset_at' | 'limited_until'>,
  now: Date,
): BudgetState {
  if (r.limited_until && r.limited_until > now) return 'limited';
  if (r.remaining === null) return 'unknown';
  if (r.remaining <= 0 && r.reset_at && r.reset_at > now) return 'exhausted';
  return 'ok';
}

/** The org's budgets (of `provider` when given), by provider and holder. */
export async function rateBudgetViews(db: Db, q: BudgetViewQuery): Promise<BudgetView[]> {
  const w = {
    orgId: q.orgId,
    provider: q.provider,
    hourSince: new Date(q.now.getTime() - HOUR_MS),
    daySince: new Date(q.now.getTime() - 24 * HOUR_MS),
  };
  const rows = await listBudgetReportRows(db, w);
  const integrationIds = [...new Set(rows.flatMap((r) => r.integration_ids))];
  if (integrationIds.length === 0) return rows.map((r) => viewOf(r, [], [], q.now));
  const waitingSince = new Date(q.now.getTime() - q.maxWaitMs - HOUR_MS);
  const units = await countRateLimitedUnits(db, { ...w, integrationIds, waitingSince });
  const waiting = await listUnitsWaitingOnLimits(db, {
    orgId: q.orgId,
    integrationIds,
    waitingSince,
    limit: WAITING_UNITS_SHOWN * rows.length,
  });
  return rows.map((r) => viewOf(r, units, waiting, q.now));
}

function viewOf(r: BudgetReportRow, units: LimitedUnitsRow[], waiting: WaitingUnitRow[], now: Date): BudgetView {
  const ids = new Set(r.integration_ids);
  const mine = units.filter((u) => ids.has(u.integration_id));
  const sum = (f: (u: LimitedUnitsRow) => number) => mine.reduce((n, u) => n + f(u), 0);
  const dues = mine.map((u) => u.next_due_at).filter((d): d is Date => d !== null);
  return {
    key: budgetKeyOf(r.provider, r.credential_id),
    provider: r.provider,
    credential: {
      holder: r.credential_id,
      ...describeBudgetHolder(r.credential_id),
      integrations: r.integration_ids.map((id, i) => ({ id, name: r.integration_names[i] ?? '' })),
    },
    state: budgetState(r, now),
    remaining: r.remaining,
    limit: r.request_limit,
    reset_at: r.reset_at,
    limited_until: r.limited_until,
    observed_at: r.observed_at,
    limit_responses: { last_hour: r.limit_responses_hour, last_day: r.limit_responses_day },
    deferrals: { last_hour: sum((u) => u.deferrals_hour), last_day: sum((u) => u.deferrals_day) },
    waiting: {
      units: sum((u) => u.waiting),
      next_due_at: dues.length ? new Date(Math.min(...dues.map((d) => d.getTime()))) : null,
      shown: waiting.filter((u) => ids.has(u.integration_id)).slice(0, WAITING_UNITS_SHOWN),
    },
  };
}
