/** Metrics (prom-client) and trace context (OpenTelemetry API); the API serves them (src/api/metrics.ts). */
export { EngineMetrics, type EngineMetricsOptions, type MetricsSource } from './metrics.js';
export {
  extractTrace,
  injectTrace,
  requestTraceContext,
  runTrace,
  traceCarrier,
  w3cTraceContext,
  TRACER_NAME,
  type TraceCarrier,
} from './trace.js';
export { ATTR, SPAN } from './spans.js';
