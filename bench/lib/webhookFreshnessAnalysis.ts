/**
 * Where an edit's time goes, from the database's own timestamps: each edit is matched to its
 * delivery (the edits of one repository and its `received` deliveries, in order: the emulator sends
 * them as they are made, one repository's edits seconds apart), the delivery to the run it armed,
 * joined or was remembered for (`sync_run_id`), and to that run's unit of the repository. Phases:
 * ingest (edit → received_at, the clock read as the delivery's transaction starts), to run
 * (received → the run's created_at: the delivery transaction's wait for the integration's row lock,
 * and for a remembered delivery the wait behind a live run or the cap until a delivery or the
 * reconciler armed one), to dispatch (→ the run's started_at: the debounce and the dispatch), to
 * claim (→ the unit's started_at: a worker slot), unit (→ the unit's last update) and observe (→
 * the watcher saw the row).
 */
import type { Db } from '../../src/db/types.js';
import { quantile, round } from './stats.js';
import type { Edit } from './webhookFreshness.js';

interface DeliveryRow {
  source: string | null;
  received_at: Date;
  outcome: string | null;
  run_created: Date | null;
  run_started: Date | null;
  unit_started: Date | null;
  unit_ended: Date | null;
}

const PHASES = ['ingest', 'to_run', 'to_dispatch', 'to_claim', 'unit', 'observe'] as const;
type Phase = (typeof PHASES)[number];

function deliveryRows(db: Db, integrationId: string, from: Date): Promise<{ rows: DeliveryRow[] }> {
  const s = db.schema;
  return db.query<DeliveryRow>(
    `SELECT d.source, d.received_at, d.outcome, r.created_at AS run_created, r.started_at AS run_started,
            u.started_at AS unit_started, u.updated_at AS unit_ended
       FROM ${s.webhook_deliveries} d
       LEFT JOIN ${s.sync_runs} r ON r.id = d.sync_run_id
       LEFT JOIN ${s.integration_sources} src
              ON src.integration_id = d.integration_id AND lower(src.external_key) = lower(d.source)
       LEFT JOIN ${s.sync_run_units} u
              ON u.sync_run_id = r.id AND u.source_id = src.id AND u.dataset_key = 'work-items'
      WHERE d.integration_id = $1 AND d.status = 'received' AND d.received_at >= $2
      ORDER BY d.received_at`,
    [integrationId, from],
  );
}

const ms = (d: Date | null) => d?.getTime() ?? null;

/** One edit's phases (null where a timestamp is missing). */
function phasesOf(e: Edit, d: DeliveryRow | undefined): Record<Phase, number | null> {
  const received = ms(d?.received_at ?? null);
  const created = ms(d?.run_created ?? null);
  const started = ms(d?.run_started ?? null);
  const claimed = ms(d?.unit_started ?? null);
  const ended = ms(d?.unit_ended ?? null);
  const diff = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.max(0, a - b));
  const armedAt = received === null || created === null ? null : Math.max(received, created);
  return {
    ingest: diff(received, e.at),
    to_run: diff(created, received),
    to_dispatch: diff(started, armedAt),
    to_claim: diff(claimed, started),
    unit: diff(ended, claimed),
    observe: diff(e.landedAt, ended),
  };
}

export interface PhaseFigures {
  matched: number;
  outcomes: Record<string, number>;
  /** p50 / p95 / max per phase, in ms. */
  phases: Record<Phase, { p50: number; p95: number; max: number }>;
}

export async function phaseFigures(db: Db, integrationId: string, from: number, edits: Edit[]): Promise<PhaseFigures> {
  const { rows } = await deliveryRows(db, integrationId, new Date(from));
  const bySource = new Map<string, DeliveryRow[]>();
  const outcomes: Record<string, number> = {};
  for (const r of rows) {
    const key = (r.source ?? '').toLowerCase();
    bySource.set(key, [...(bySource.get(key) ?? []), r]);
    outcomes[r.outcome ?? 'none'] = (outcomes[r.outcome ?? 'none'] ?? 0) + 1;
  }
  const taken = new Map<string, number>();
  const samples = Object.fromEntries(PHASES.map((p) => [p, [] as number[]])) as Record<Phase, number[]>;
  let matched = 0;
  for (const e of edits) {
    const key = e.source.toLowerCase();
    const k = taken.get(key) ?? 0;
    taken.set(key, k + 1);
    const d = bySource.get(key)?.[k];
    if (d) matched++;
    const p = phasesOf(e, d);
    for (const name of PHASES) if (p[name] !== null) samples[name].push(p[name]);
  }
  const phases = Object.fromEntries(
    PHASES.map((p) => [
      p,
      {
        p50: round(quantile(samples[p], 0.5)),
        p95: round(quantile(samples[p], 0.95)),
        max: round(Math.max(0, ...samples[p])),
      },
    ]),
  ) as PhaseFigures['phases'];
  return { matched, outcomes, phases };
}

export interface RunFigures {
  runs_armed: number;
  units_per_run_p50: number;
  units_per_run_max: number;
  run_duration_p50_ms: number;
  run_duration_p95_ms: number;
  /** Most webhook runs live (created, not completed) at once. */
  max_live_runs: number;
  statuses: Record<string, number>;
}

export async function runFigures(db: Db, integrationId: string, from: number): Promise<RunFigures> {
  const { rows } = await db.query<{
    created_at: Date;
    started_at: Date | null;
    completed_at: Date | null;
    status: string;
    total_units: number;
  }>(
    `SELECT created_at, started_at, completed_at, status, total_units FROM ${db.schema.sync_runs}
      WHERE integration_id = $1 AND triggered_by = 'webhook' AND created_at >= $2`,
    [integrationId, new Date(from)],
  );
  const durations = rows
    .filter((r) => r.started_at && r.completed_at)
    .map((r) => r.completed_at!.getTime() - r.started_at!.getTime());
  const marks = rows.flatMap((r) => [
    { t: r.created_at.getTime(), d: 1 },
    { t: r.completed_at?.getTime() ?? Number.POSITIVE_INFINITY, d: -1 },
  ]);
  marks.sort((a, b) => a.t - b.t || a.d - b.d);
  let live = 0;
  let most = 0;
  for (const m of marks) most = Math.max(most, (live += m.d));
  const statuses: Record<string, number> = {};
  for (const r of rows) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const units = rows.map((r) => r.total_units);
  return {
    runs_armed: rows.length,
    units_per_run_p50: round(quantile(units, 0.5)),
    units_per_run_max: Math.max(0, ...units),
    run_duration_p50_ms: round(quantile(durations, 0.5)),
    run_duration_p95_ms: round(quantile(durations, 0.95)),
    max_live_runs: most,
    statuses,
  };
}

/** Deliveries of the integration received since `from`, per status. */
export async function deliveryCounts(db: Db, integrationId: string, from: number): Promise<Record<string, number>> {
  const { rows } = await db.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM ${db.schema.webhook_deliveries}
      WHERE integration_id = $1 AND received_at >= $2 GROUP BY status`,
    [integrationId, new Date(from)],
  );
  return { received: 0, duplicate: 0, rejected: 0, ...Object.fromEntries(rows.map((r) => [r.status, r.n])) };
}
