/**
 * Trace context: the W3C codec, what a trigger stores with its run and outbox rows, and a full run
 * (trigger over HTTP on a real server, BullMQ on Redis, real PostgreSQL) whose relay, dispatch,
 * unit, finalize and post_sync spans all join the trigger's trace as children of its span.
 */
import { randomBytes } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, SPAN } from '../../src/observability/spans.js';
import { extractTrace, injectTrace, requestTraceContext, traceCarrier } from '../../src/observability/trace.js';
import { call, openApiHarness, SYNTHETIC, type ApiHarness } from '../api/helpers.js';
import { openTestEngine, waitFor, type TestEngine } from '../helpers/engine.js';
import { installRecorder, type FinishedSpan, type SpanRecorder } from './recorder.js';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const TASK_SPANS = [
  'syncrelay.dispatch_sync_run',
  'syncrelay.run_sync_unit',
  'syncrelay.finalize_sync_run',
  'syncrelay.post_sync',
];

describe('W3C trace context', () => {
  it('round-trips traceparent and tracestate; keeps only the sampled flag', () => {
    const traceId = hex(16);
    const spanId = hex(8);
    const ctx = extractTrace({ traceparent: `00-${traceId}-${spanId}-03`, tracestate: 'a=1,b=2' });
    const sc = trace.getSpanContext(ctx)!;
    expect(sc).toMatchObject({ traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    expect(injectTrace(ctx)).toEqual({ traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'a=1,b=2' });
  });

  it('refuses malformed, all-zero and version-ff parents', () => {
    const bad = [
      'garbage',
      `00-${'0'.repeat(32)}-${hex(8)}-01`,
      `00-${hex(16)}-${'0'.repeat(16)}-01`,
      `ff-${hex(16)}-${hex(8)}-01`,
      `00-${hex(16)}-${hex(8)}-01-extra`,
      `00-${hex(16).toUpperCase()}-${hex(8)}-01`,
    ];
    for (const traceparent of bad) expect(trace.getSpanContext(extractTrace({ traceparent }))).toBeUndefined();
    expect(injectTrace(ROOT_CONTEXT)).toBeNull();
  });

  it('a stored carrier keeps only short string entries', () => {
    expect(traceCarrier(null)).toBeNull();
    expect(traceCarrier(['x'])).toBeNull();
    expect(traceCarrier({ traceparent: 1, 'bad key': 'x', tracestate: 'y'.repeat(600) })).toBeNull();
    expect(traceCarrier({ TraceParent: 'v', other: 'w' })).toEqual({ traceparent: 'v', other: 'w' });
  });

  it('requestTraceContext reads the headers when no span is active', () => {
    const tp = `00-${hex(16)}-${hex(8)}-01`;
    expect(requestTraceContext({ headers: { traceparent: tp } })).toEqual({ traceparent: tp });
    expect(requestTraceContext({ headers: { traceparent: 'nope' } })).toBeNull();
    expect(requestTraceContext({ headers: {} })).toBeNull();
  });
});

describe('without an SDK (no-op tracer)', () => {
  let te: TestEngine;
  afterEach(async () => {
    await te?.close();
  });

  it('stores a given parent as is, and nothing when there is none (as before)', async () => {
    te = await openTestEngine();
    const { engine } = te;
    const integ = await engine.createIntegration({
      orgId: 'org-n',
      provider: 'synthetic',
      name: 'n',
      sources: ['s'],
      datasets: ['teams'],
      config: {},
    });
    const traceparent = `00-${hex(16)}-${hex(8)}-01`;
    const withTrace = await engine.trigger({
      orgId: 'org-n',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'api',
      trace: { traceparent },
    });
    const without = await engine.trigger({
      orgId: 'org-n',
      integrationId: integ.id,
      mode: 'incremental',
      triggeredBy: 'api',
    });
    const stored = await storedTraces(te.engine.db, withTrace.syncRunId);
    expect(stored.run).toEqual({ traceparent });
    expect(stored.outbox).toEqual([{ traceparent }]);
    const none = await storedTraces(te.engine.db, without.syncRunId);
    expect(none.run).toBeNull();
    expect(none.outbox).toEqual([null]);
  });
});

describe('a run joins its trigger’s trace', () => {
  let recorder: SpanRecorder;
  let uninstall: () => void;
  beforeAll(() => {
    ({ recorder, uninstall } = installRecorder());
  });
  afterAll(() => uninstall());

  describe('triggered over HTTP with a traceparent header (BullMQ on Redis)', () => {
    let h: ApiHarness;
    afterAll(async () => {
      await h?.close();
    });

    it('relay, dispatch, every unit, finalize and post_sync are children of the trigger span', async () => {
      h = await openApiHarness();
      const created = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC });
      expect(created.status).toBe(201);
      const traceId = hex(16);
      const callerSpan = hex(8);
      const answer = await call(h.url, 'POST', `/api/v1/integrations/${created.body.id}/backfill`, {
        token: h.tokens.trigger,
        body: { since: '2026-01-01T00:00:00Z', before: '2026-01-15T00:00:00Z' },
        headers: { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: 'vendor=abc' },
      });
      expect(answer.status).toBe(202);
      const runId: string = answer.body.sync_run_id;

      h.engine.startWorker({ concurrency: 4 });
      await h.engine.startReconciler();
      const spans = await runSpans(recorder, runId);

      // The trigger span: child of the caller's span, in the caller's trace.
      const triggers = spans.filter((s) => s.name === SPAN.trigger);
      expect(triggers).toHaveLength(1);
      const trigger = triggers[0]!;
      expect(trigger).toMatchObject({ traceId, parentSpanId: callerSpan, status: { code: SpanStatusCode.UNSET } });

      // What was stored: the trigger span's context, on the run and on every outbox row.
      const expected = { traceparent: `00-${traceId}-${trigger.spanId}-01`, tracestate: 'vendor=abc' };
      const stored = await storedTraces(h.db, runId);
      expect(stored.run).toEqual(expected);
      expect(stored.outbox).toHaveLength(3);
      for (const t of stored.outbox) expect(t).toEqual(expected);

      // Every span of the run: the same trace, the trigger span as parent, ended without error.
      for (const s of spans.filter((x) => x !== trigger)) {
        expect(s, s.name).toMatchObject({ traceId, parentSpanId: trigger.spanId });
        expect(s.status.code, s.name).not.toBe(SpanStatusCode.ERROR);
      }
      const relayKinds = new Set(spans.filter((s) => s.name === SPAN.relayPublish).map((s) => s.attributes[ATTR.task]));
      expect([...relayKinds].sort()).toEqual(['dispatch_sync_run', 'finalize_sync_run', 'post_sync']);
      for (const s of spans.filter((x) => x.name === SPAN.relayPublish)) {
        expect(s.kind).toBe(SpanKind.PRODUCER);
        expect(s.attributes[ATTR.outboxId]).toMatch(/^[0-9a-f-]{36}$/);
      }
      for (const name of TASK_SPANS) {
        const of = spans.filter((s) => s.name === name);
        expect(of.length, name).toBeGreaterThan(0);
        for (const s of of) expect(s.kind, name).toBe(SpanKind.CONSUMER);
      }

      // One run_sync_unit span for each unit of the run, each naming its unit and outcome.
      const { rows: units } = await h.db.query<{ id: string }>(
        'SELECT id FROM syncrelay.sync_run_units WHERE sync_run_id = $1',
        [runId],
      );
      const unitSpans = spans.filter((s) => s.name === 'syncrelay.run_sync_unit');
      expect(new Set(unitSpans.map((s) => s.attributes[ATTR.unitId]))).toEqual(new Set(units.map((u) => u.id)));
      expect(unitSpans.filter((s) => s.attributes[ATTR.outcome] === 'success')).toHaveLength(units.length);
      const finalize = spans.filter((s) => s.name === 'syncrelay.finalize_sync_run');
      expect(finalize.some((s) => s.attributes[ATTR.outcome] === 'finalized')).toBe(true);
    });
  });

  describe('triggered by a library call inside an active span (in-process broker)', () => {
    let te: TestEngine;
    afterAll(async () => {
      await te?.close();
    });

    it('the trigger span is a child of the active span and the run joins that trace', async () => {
      te = await openTestEngine();
      const { engine } = te;
      const integ = await engine.createIntegration({
        orgId: 'org-l',
        provider: 'synthetic',
        name: 'library',
        sources: ['s1', 's2'],
        datasets: ['teams', 'work-items'],
        config: { itemsPerDay: 1, latencyMs: 0 },
      });
      const app = trace.getTracer('app');
      const { runId, appSpan } = await app.startActiveSpan('app.request', async (span) => {
        const t = await engine.trigger({
          orgId: 'org-l',
          integrationId: integ.id,
          mode: 'full_resync',
          triggeredBy: 'manual',
        });
        span.end();
        return { runId: t.syncRunId, appSpan: span.spanContext() };
      });
      engine.startWorker({ concurrency: 4 });
      await engine.startReconciler();
      const spans = await runSpans(recorder, runId);
      const trigger = spans.find((s) => s.name === SPAN.trigger)!;
      expect(trigger).toMatchObject({ traceId: appSpan.traceId, parentSpanId: appSpan.spanId });
      for (const s of spans.filter((x) => x !== trigger))
        expect(s, s.name).toMatchObject({ traceId: appSpan.traceId, parentSpanId: trigger.spanId });
      for (const name of [SPAN.relayPublish, ...TASK_SPANS])
        expect(
          spans.some((s) => s.name === name),
          name,
        ).toBe(true);
    });
  });
});

/** The spans naming `runId`, once its post_sync publish and delivery have both ended. */
async function runSpans(recorder: SpanRecorder, runId: string): Promise<FinishedSpan[]> {
  const ofRun = () => recorder.spans.filter((s) => s.attributes[ATTR.runId] === runId);
  const ended = (name: string, task: string) =>
    ofRun().some((s) => s.name === name && s.attributes[ATTR.task] === task);
  await waitFor(async () => ended('syncrelay.post_sync', 'post_sync') && ended(SPAN.relayPublish, 'post_sync'), 60_000);
  return ofRun();
}

async function storedTraces(
  db: { query: ApiHarness['db']['query'] },
  runId: string,
): Promise<{ run: unknown; outbox: unknown[] }> {
  const { rows: run } = await db.query<{ trace: unknown }>(
    "SELECT result->'trace' AS trace FROM syncrelay.sync_runs WHERE id = $1",
    [runId],
  );
  const { rows: outbox } = await db.query<{ trace_context: unknown }>(
    'SELECT trace_context FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1 ORDER BY kind',
    [runId],
  );
  return { run: run[0]?.trace ?? null, outbox: outbox.map((r) => r.trace_context) };
}
