/**
 * The spans of a run. Every one of them is a child of the context stored with the run's trigger,
 * so a whole run — however many processes, retries and days it spans — reads as one trace:
 *
 *   syncrelay.trigger                  (parent: the caller's context or the request's traceparent)
 *   ├─ syncrelay.relay.publish         one per outbox row published (dispatch, finalize, post_sync)
 *   ├─ syncrelay.dispatch_sync_run     one per delivery
 *   ├─ syncrelay.run_sync_unit         one per delivery of each unit
 *   ├─ syncrelay.finalize_sync_run
 *   └─ syncrelay.post_sync
 *
 * Tasks are siblings rather than a chain because they are re-delivered, re-armed and recovered by
 * the reconciler: the stored context is the one parent every delivery can name.
 */
import { context, SpanKind, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { TaskMessage } from '../broker/types.js';
import type { OutboxRow } from '../store/rows.js';
import { extractTrace, failSpan, inSpan, injectTrace, type TraceCarrier } from './trace.js';

export const ATTR = {
  orgId: 'syncrelay.org_id',
  runId: 'syncrelay.run_id',
  unitId: 'syncrelay.unit_id',
  outboxId: 'syncrelay.outbox_id',
  task: 'syncrelay.task',
  outcome: 'syncrelay.outcome',
  mode: 'syncrelay.mode',
  integrationId: 'syncrelay.integration_id',
} as const;

export const SPAN = {
  trigger: 'syncrelay.trigger',
  relayPublish: 'syncrelay.relay.publish',
} as const;

/**
 * The trigger's span: a child of `parent` (the request's stored context) or of the active context.
 * `fn` receives the carrier to store with the run — this span's context, or null when there is no
 * valid context at all (no SDK and no parent), which stores nothing.
 */
export function inTriggerSpan<T>(
  tracer: Tracer,
  parent: TraceCarrier | null | undefined,
  attributes: { orgId: string; integrationId: string; mode: string },
  fn: (carrier: TraceCarrier | null, span: Span) => Promise<T>,
): Promise<T> {
  const parentCtx = parent ? extractTrace(parent) : context.active();
  const options = {
    kind: SpanKind.INTERNAL,
    attributes: {
      [ATTR.orgId]: attributes.orgId,
      [ATTR.integrationId]: attributes.integrationId,
      [ATTR.mode]: attributes.mode,
    },
  };
  // With no SDK the span is a no-op carrying its parent's context, so the parent is what is stored.
  return inSpan(tracer, SPAN.trigger, options, parentCtx, (span) =>
    fn(injectTrace(trace.setSpan(parentCtx, span)), span),
  );
}

/** A task delivery's span, child of the trace its payload carries; the outcome is recorded on it. */
export function inTaskSpan<T>(
  tracer: Tracer,
  msg: TaskMessage,
  outboxId: string | null,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const { orgId, runId, unitId } = msg.payload;
  const attributes: Record<string, string> = { [ATTR.task]: msg.name, [ATTR.orgId]: orgId, [ATTR.runId]: runId };
  if (unitId) attributes[ATTR.unitId] = unitId;
  if (outboxId) attributes[ATTR.outboxId] = outboxId;
  return inSpan(
    tracer,
    `syncrelay.${msg.name}`,
    { kind: SpanKind.CONSUMER, attributes },
    extractTrace(msg.payload.trace),
    fn,
  );
}

/** A short name for a task's result, for a span attribute. */
export function outcomeName(outcome: unknown): string | undefined {
  if (typeof outcome === 'string') return outcome;
  if (outcome && typeof outcome === 'object' && 'kind' in outcome && typeof outcome.kind === 'string')
    return outcome.kind;
  return undefined;
}

/** One PRODUCER span per outbox row around a batch publish; end them with the batch's result. */
export class PublishSpans {
  private readonly spans: Span[];

  constructor(tracer: Tracer, rows: readonly OutboxRow[]) {
    this.spans = rows.map((r) =>
      tracer.startSpan(
        SPAN.relayPublish,
        {
          kind: SpanKind.PRODUCER,
          attributes: {
            [ATTR.task]: r.kind,
            [ATTR.orgId]: r.org_id,
            [ATTR.runId]: r.sync_run_id,
            [ATTR.outboxId]: r.id,
          },
        },
        extractTrace(r.trace_context),
      ),
    );
  }

  ok(): void {
    for (const s of this.spans) s.end();
  }

  failed(err: unknown): void {
    for (const s of this.spans) {
      failSpan(s, err);
      s.end();
    }
  }
}
