/**
 * One shape's figures in the webhook benchmark's ingestion part (./webhooksIngest.ts): its name,
 * the load's latencies and rate, what the database holds of it, the API processes' transactions and
 * the CPU time of the load generator and the API processes.
 */
import { loadavg } from 'node:os';
import { round } from './stats.js';
import type { TxStats } from './webhooksApi.js';
import type { LoadResult } from './webhooksLoad.js';
import type { TxFigures } from './webhooksServer.js';

/** The API processes a shape ran on: how many, each one's pool, and where they were pinned. */
export interface ApiShape {
  processes: number;
  pool: number;
  pinned: string | null;
}

/** The delivery rows of one shape's integration: in all, received, duplicates, and the outcomes. */
export interface DeliveryRows {
  rows: number;
  received: number;
  duplicate: number;
  outcomes: Record<string, number>;
}

/** A shape's name: p<P>-c<C>, "-pinned" for the pinned one. */
export function shapeName(s: { api_processes: number; concurrency: number; pinned: string | null }): string {
  return `p${s.api_processes}-c${s.concurrency}${s.pinned ? '-pinned' : ''}`;
}

export interface ShapeFigures {
  shape: string;
  api_processes: number;
  concurrency: number;
  /** Connections of each API process's pool. */
  api_pool: number;
  /** null, or where the load generator and the API processes were pinned. */
  pinned: string | null;
  accepted_per_s: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
  non_202: number;
  non_202_statuses: Record<string, number>;
  sent: number;
  rows: number;
  received: number;
  duplicate: number;
  none_lost: boolean;
  outcomes: Record<string, number>;
  transactions: TxFigures;
  cpu: CpuFigures;
  load_avg_1m: number;
}

/** CPU time over the shape: cores = CPU ms ÷ wall ms (1 = one core busy throughout). */
export interface CpuFigures {
  wall_ms: number;
  load_generator_ms: number;
  load_generator_cores: number;
  /** Per API process, the first one (the reconciler's) first. */
  api_ms: number[];
  api_cores: number;
}

export function cpuFigures(r: LoadResult, api: readonly TxStats[]): CpuFigures {
  const apiMs = api.map((s) => round(s.cpuMs));
  return {
    wall_ms: round(r.wallMs),
    load_generator_ms: round(r.cpuMs),
    load_generator_cores: round(r.cpuMs / r.wallMs),
    api_ms: apiMs,
    api_cores: round(apiMs.reduce((a, b) => a + b, 0) / r.wallMs),
  };
}

export interface Checked {
  tx: TxFigures;
  cpu: CpuFigures;
  found: DeliveryRows;
  noneLost: boolean;
  sent: number;
}

export function shapeFigures(name: string, apis: ApiShape, r: LoadResult, k: Checked): ShapeFigures {
  return {
    shape: name,
    api_processes: apis.processes,
    concurrency: r.concurrency,
    api_pool: apis.pool,
    pinned: apis.pinned,
    accepted_per_s: r.acceptedPerS,
    p50_ms: r.p50Ms,
    p95_ms: r.p95Ms,
    p99_ms: r.p99Ms,
    max_ms: r.maxMs,
    non_202: r.non202,
    non_202_statuses: r.statuses,
    sent: k.sent,
    rows: k.found.rows,
    received: k.found.received,
    duplicate: k.found.duplicate,
    none_lost: k.noneLost,
    outcomes: k.found.outcomes,
    transactions: k.tx,
    cpu: k.cpu,
    load_avg_1m: round(loadavg()[0]!),
  };
}
