/**
 * The shape of one endpoint of the HTTP API, and the pieces every endpoint table shares. The
 * tables (endpoints.ts, schedules.ts) build on this module; it imports neither of them.
 */
import { z } from 'zod';

/** `public` needs no token; the others need a token holding that scope (`admin` holds every scope). */
export type RouteScope = 'public' | 'read' | 'trigger' | 'admin';

export interface Endpoint<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  operationId: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify path syntax (`:id`). */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  scope: RouteScope;
  params: P;
  query: Q;
  /** Absent: the body is not read. */
  body?: B;
  /** Whether an Idempotency-Key header is honoured. */
  idempotent?: boolean;
  success: { status: number; description: string; schema: z.ZodType };
  /** Documented failure statuses (all answer with the error shape). */
  errors: number[];
}

/** The prefix of every versioned path. */
export const V1 = '/api/v1';

/** The failures any endpoint that needs a token may answer with. */
export const AUTH_ERRORS = [401, 403, 429];

/** Path parameters of an endpoint that has none. */
export const NoParams = z.strictObject({});

/** Checks one table entry against {@link Endpoint} while keeping its schemas' own types. */
export function endpoint<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  e: Endpoint<P, Q, B>,
): Endpoint<P, Q, B> {
  return e;
}
