/** GET /activity: the org's activity per hour and its work-item metrics per day, for the dashboard's charts. */
import type { FastifyInstance } from 'fastify';
import { TERMINAL_RUN_STATUSES, TERMINAL_UNIT_STATUSES } from '../../domain/statuses.js';
import {
  countPassesByHour,
  countRunsEndedByHour,
  countUnitsEndedByHour,
  latestMetricsDays,
  type HourStatusCount,
  type MetricsDayRow,
  type PassHour,
  type UnitHourCount,
} from '../../store/activity.js';
import { outboxDepthByHour, type OutboxDepthHour } from '../../store/outboxSamples.js';
import { principalOf } from '../auth.js';
import { DEFAULT_ACTIVITY_DAYS, DEFAULT_ACTIVITY_HOURS } from '../contracts/activity.js';
import { endpoints } from '../contracts/endpoints.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

/** The window: the last `hours` whole hours, the current one last (it ends at `now`). */
export function activityWindow(now: Date, hours: number): { since: Date; until: Date } {
  const currentHour = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
  return { since: new Date(currentHour - (hours - 1) * HOUR_MS), until: now };
}

/** The UTC days of the daily metrics: the last `days`, today last. */
export function metricsDays(now: Date, days: number): { first_day: string; last_day: string } {
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { first_day: day(now.getTime() - (days - 1) * DAY_MS), last_day: day(now.getTime()) };
}

function zeros(keys: readonly string[]): Record<string, number> {
  return Object.fromEntries(keys.map((k) => [k, 0]));
}

function byBucket<T extends { bucket: number }>(rows: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const r of rows) out.set(r.bucket, [...(out.get(r.bucket) ?? []), r]);
  return out;
}

function presentOutbox(o: OutboxDepthHour | undefined) {
  if (!o) return null;
  const age = o.oldest_due_age_ms_max;
  return {
    samples: o.samples,
    pending_max: o.pending_max,
    due_max: o.due_max,
    oldest_due_age_seconds_max: age === null ? null : Math.round(Number(age)) / 1000,
  };
}

function presentPasses(p: PassHour | undefined) {
  return p
    ? { passes: p.passes, errors: p.errors, avg_duration_ms: p.avg_ms }
    : { passes: 0, errors: 0, avg_duration_ms: null };
}

export interface ActivityRows {
  runs: HourStatusCount[];
  units: UnitHourCount[];
  outbox: OutboxDepthHour[];
  /** Null: the caller may not see the system-wide series. */
  passes: PassHour[] | null;
}

/** One bucket per hour of the window, oldest first, from the rows the store counted. */
export function hourBuckets(since: Date, until: Date, hours: number, rows: ActivityRows) {
  const runs = byBucket(rows.runs);
  const units = byBucket(rows.units);
  const outbox = new Map(rows.outbox.map((o) => [o.bucket, o]));
  const passes = rows.passes && new Map(rows.passes.map((p) => [p.bucket, p]));
  return Array.from({ length: hours }, (_, b) => {
    const start = since.getTime() + b * HOUR_MS;
    const ended = units.get(b) ?? [];
    const total = ended.reduce((n, u) => n + u.n, 0);
    const minutes = Math.max(1, Math.min(60, (until.getTime() - start) / MINUTE_MS));
    return {
      start: new Date(start).toISOString(),
      runs: { ...zeros(TERMINAL_RUN_STATUSES), ...Object.fromEntries((runs.get(b) ?? []).map((r) => [r.status, r.n])) },
      units: { ...zeros(TERMINAL_UNIT_STATUSES), ...Object.fromEntries(ended.map((u) => [u.status, u.n])) },
      units_per_minute: Math.round((total / minutes) * 100) / 100,
      rate_limit_deferrals: ended.reduce((n, u) => n + u.deferrals, 0),
      outbox: presentOutbox(outbox.get(b)),
      reconciler: passes ? presentPasses(passes.get(b)) : null,
    };
  });
}

function presentMetricsDay(m: MetricsDayRow) {
  return { ...m, computed_at: m.computed_at.toISOString() };
}

export function activityRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.getActivity, async ({ query, request }) => {
    const { orgId, scopes } = principalOf(request);
    const now = ctx.clock.now();
    const hours = query.hours ?? DEFAULT_ACTIVITY_HOURS;
    const { since, until } = activityWindow(now, hours);
    const days = metricsDays(now, query.days ?? DEFAULT_ACTIVITY_DAYS);
    // Passes carry every org's counters: only an admin token sees them (as GET /reconciler/passes).
    const admin = scopes.includes('admin');
    const rows: ActivityRows = {
      runs: await countRunsEndedByHour(ctx.db, orgId, since, until),
      units: await countUnitsEndedByHour(ctx.db, orgId, since, until),
      outbox: await outboxDepthByHour(ctx.db, orgId, since, until),
      passes: admin ? await countPassesByHour(ctx.db, since, until) : null,
    };
    const metrics = await latestMetricsDays(ctx.db, orgId, days.first_day, days.last_day);
    return {
      since: since.toISOString(),
      until: until.toISOString(),
      hours: hourBuckets(since, until, hours, rows),
      includes_system: admin,
      work_item_metrics: { ...days, days: metrics.map(presentMetricsDay) },
    };
  });
}
