/** What every route module receives. */
import type { FastifyRequest } from 'fastify';
import type { EngineContext } from '../../context.js';

export interface RouteDeps {
  ctx: EngineContext;
  /** Longest backfill window accepted, in days. */
  maxBackfillDays: number;
  /** How long each readiness check may take. */
  readinessTimeoutMs: number;
  /** The trace context stored with a triggered run (W3C headers), if any. */
  traceContext?: (request: FastifyRequest) => Record<string, string> | null;
  /** process start, for /healthz */
  startedAtMs: number;
}
