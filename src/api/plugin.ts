/** What a surface beside the API (the dashboard, `/metrics`) hands the server to join it. */
import type { FastifyInstance } from 'fastify';
import type { RouteDeps } from './routes/deps.js';

/**
 * Adds routes or hooks to the server (a dashboard, `/metrics`). Routes declare who may call them
 * with `config: { scope: 'public' | 'read' | 'trigger' | 'admin' }` (default `admin`); the auth
 * hook then sets `request.principal`. Errors thrown answer in the API's error shape.
 */
export type ApiPlugin = (app: FastifyInstance, deps: RouteDeps) => Promise<void> | void;
