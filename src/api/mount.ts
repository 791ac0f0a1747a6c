/** Mounts an endpoint of the contract table: parses params, query and body, then calls the handler. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Endpoint } from './contracts/endpoint.js';
import { fromZodError, type InputLocation } from './errors.js';

export interface Input<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  params: z.output<P>;
  query: z.output<Q>;
  /** The parsed body (undefined when the endpoint reads none). */
  body: z.output<B>;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** The handler returns the success body; the status is the endpoint's unless it set another. */
export type Handler<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> = (
  input: Input<P, Q, B>,
) => Promise<unknown>;

function parse<T extends z.ZodType>(schema: T, value: unknown, location: InputLocation): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw fromZodError(r.error, location);
  return r.data;
}

export function mount<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  app: FastifyInstance,
  e: Endpoint<P, Q, B>,
  handler: Handler<P, Q, B>,
): void {
  app.route({
    method: e.method,
    url: e.path,
    config: { scope: e.scope },
    handler: async (request, reply) => {
      const params = parse(e.params, request.params ?? {}, 'params');
      const query = parse(e.query, request.query ?? {}, 'query');
      // An endpoint without a body schema reads none: whatever JSON came is dropped here, so it
      // plays no part later (not even in an Idempotency-Key fingerprint).
      if (!e.body) request.body = undefined;
      const body = (e.body ? parse(e.body, request.body, 'body') : undefined) as z.output<B>;
      reply.code(e.success.status);
      return handler({ params, query, body, request, reply });
    },
  });
}
