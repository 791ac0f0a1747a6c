/** Metrics (prom-client), trace context (OpenTelemetry API) and the HTTP pieces that expose them. */
export { EngineMetrics, type EngineMetricsOptions, type MetricsSource } from './metrics.js';
export { metricsPlugin, triggerMetricsHook, METRICS_PATH } from './http.js';
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
