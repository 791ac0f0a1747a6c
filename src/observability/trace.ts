/**
 * Trace context that outlives a process: a trigger's W3C context is stored with its run and outbox
 * rows (a small string map, the "carrier"), travels in task payloads, and becomes the parent of
 * the relay publish and task spans. Only `@opentelemetry/api` is used: with no SDK registered every
 * span is a no-op. A propagator registered globally by the application is used first; the W3C
 * `traceparent` / `tracestate` encoding below is the fallback (the API alone propagates nothing).
 */
import {
  context,
  createTraceState,
  defaultTextMapGetter,
  defaultTextMapSetter,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  type Tracer,
} from '@opentelemetry/api';

/** A stored trace context: header name → value (e.g. `traceparent`). */
export type TraceCarrier = Record<string, string>;

export const TRACER_NAME = 'syncrelay';

const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';
/** version-traceid-spanid-flags; a future version may append fields. */
const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const MAX_ENTRIES = 8;
const KEY_RE = /^[a-z0-9._-]{1,64}$/;
const MAX_VALUE = 512;

/** The tracer syncrelay's spans come from (the global provider's unless the engine was given one). */
export function tracerOf(deps: { tracer?: Tracer }): Tracer {
  return deps.tracer ?? trace.getTracer(TRACER_NAME);
}

/** W3C Trace Context (traceparent + tracestate), used when no global propagator is registered. */
export const w3cTraceContext: TextMapPropagator = {
  inject(ctx: Context, carrier: unknown, setter: TextMapSetter) {
    const sc = trace.getSpanContext(ctx);
    if (!sc || !isSpanContextValid(sc)) return;
    const flags = (sc.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
    setter.set(carrier, TRACEPARENT, `00-${sc.traceId}-${sc.spanId}-${flags}`);
    const state = sc.traceState?.serialize();
    if (state) setter.set(carrier, TRACESTATE, state);
  },
  extract(ctx: Context, carrier: unknown, getter: TextMapGetter) {
    const header = firstValue(getter.get(carrier, TRACEPARENT));
    const m = header ? TRACEPARENT_RE.exec(header.trim()) : null;
    if (!m || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined)) return ctx;
    const sc = { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) & TraceFlags.SAMPLED, isRemote: true };
    if (!isSpanContextValid(sc)) return ctx;
    const state = firstValue(getter.get(carrier, TRACESTATE));
    return trace.setSpanContext(ctx, state ? { ...sc, traceState: createTraceState(state) } : sc);
  },
  fields: () => [TRACEPARENT, TRACESTATE],
};

function firstValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The carrier of `ctx`'s span context, or null when it has none (nothing to store). */
export function injectTrace(ctx: Context): TraceCarrier | null {
  if (!trace.getSpanContext(ctx) || !isSpanContextValid(trace.getSpanContext(ctx)!)) return null;
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier, defaultTextMapSetter);
  if (!carrier[TRACEPARENT]) w3cTraceContext.inject(ctx, carrier, defaultTextMapSetter);
  return traceCarrier(carrier);
}

/** A context whose remote parent is the stored carrier (ROOT_CONTEXT when it holds none). */
export function extractTrace(carrier: unknown): Context {
  const c = traceCarrier(carrier);
  if (!c) return ROOT_CONTEXT;
  const viaGlobal = propagation.extract(ROOT_CONTEXT, c, defaultTextMapGetter);
  const sc = trace.getSpanContext(viaGlobal);
  if (sc && isSpanContextValid(sc)) return viaGlobal;
  return w3cTraceContext.extract(viaGlobal, c, defaultTextMapGetter);
}

/**
 * A stored or received value as a carrier: a plain object of short string entries (anything else
 * is dropped), or null when nothing is left. Keeps what is stored in jsonb small and harmless.
 */
export function traceCarrier(value: unknown): TraceCarrier | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const out: TraceCarrier = {};
  let n = 0;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const key = k.toLowerCase();
    if (typeof v !== 'string' || v.length > MAX_VALUE || !KEY_RE.test(key)) continue;
    out[key] = v;
    if (++n >= MAX_ENTRIES) break;
  }
  return n > 0 ? out : null;
}

/** The trace a run was triggered under (stored in `result.trace` by the planner). */
export function runTrace(run: { result: Record<string, unknown> | null } | null | undefined): TraceCarrier | null {
  return traceCarrier(run?.result?.trace);
}

/**
 * For an API request: the active span's context (an HTTP instrumentation's server span) when
 * there is one, else the request's own `traceparent` / `tracestate` headers, else null.
 * Pass it as the API server's `traceContext` option.
 */
export function requestTraceContext(request: {
  headers: Record<string, string | string[] | undefined>;
}): TraceCarrier | null {
  const active = injectTrace(context.active());
  if (active) return active;
  const headers: Record<string, string> = {};
  for (const field of [TRACEPARENT, TRACESTATE]) {
    const v = firstValue(request.headers[field]);
    if (v) headers[field] = v;
  }
  return injectTrace(w3cTraceContext.extract(ROOT_CONTEXT, headers, defaultTextMapGetter));
}

/** `{ traceId, spanId }` of a recording span, for log lines; empty for a no-op span. */
export function traceIds(span: Span): { traceId?: string; spanId?: string } {
  const sc = span.spanContext();
  return span.isRecording() && isSpanContextValid(sc) ? { traceId: sc.traceId, spanId: sc.spanId } : {};
}

/** Records an error on a span (status ERROR + the exception). */
export function failSpan(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/**
 * Runs `fn` inside a span that is ended when it settles (status ERROR if it throws).
 * The span is active while `fn` runs, for providers and sinks that create their own spans.
 */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  options: Parameters<Tracer['startSpan']>[1],
  parent: Context,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, options, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}
