/**
 * A recording OpenTelemetry tracer provider and an AsyncLocalStorage context manager, written
 * against `@opentelemetry/api` alone. (@opentelemetry/sdk-trace-base 2.x declares a peer range of
 * `@opentelemetry/api <1.10.0`, which the project's 1.10.0 falls outside; this records the same
 * facts its InMemorySpanExporter would: names, kinds, ids, parent span ids, attributes, status.)
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import {
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type ContextManager,
  type Link,
  type Span,
  type SpanAttributeValue,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

export interface FinishedSpan {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  attributes: Attributes;
  status: SpanStatus;
  exceptions: number;
}

class RecordingSpan implements Span {
  private readonly attributes: Attributes;
  private status: SpanStatus = { code: SpanStatusCode.UNSET };
  private exceptions = 0;
  private ended = false;

  constructor(
    private name: string,
    private readonly kind: SpanKind,
    private readonly ctx: SpanContext,
    private readonly parentSpanId: string | undefined,
    attributes: Attributes,
    private readonly onEnd: (s: FinishedSpan) => void,
  ) {
    this.attributes = { ...attributes };
  }

  spanContext(): SpanContext {
    return this.ctx;
  }
  setAttribute(key: string, value: SpanAttributeValue): this {
    this.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    Object.assign(this.attributes, attributes);
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(_link: Link): this {
    return this;
  }
  addLinks(_links: Link[]): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.status = status;
    return this;
  }
  updateName(name: string): this {
    this.name = name;
    return this;
  }
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd({
      name: this.name,
      kind: this.kind,
      traceId: this.ctx.traceId,
      spanId: this.ctx.spanId,
      parentSpanId: this.parentSpanId,
      attributes: this.attributes,
      status: this.status,
      exceptions: this.exceptions,
    });
  }
  isRecording(): boolean {
    return !this.ended;
  }
  recordException(): void {
    this.exceptions += 1;
  }
}

class RecordingTracer implements Tracer {
  constructor(private readonly onEnd: (s: FinishedSpan) => void) {}

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
    const parent = options.root ? undefined : trace.getSpanContext(ctx);
    const valid = parent && isSpanContextValid(parent) ? parent : undefined;
    const sc: SpanContext = {
      traceId: valid?.traceId ?? randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      traceFlags: TraceFlags.SAMPLED,
      ...(valid?.traceState ? { traceState: valid.traceState } : {}),
    };
    return new RecordingSpan(
      name,
      options.kind ?? SpanKind.INTERNAL,
      sc,
      valid?.spanId,
      options.attributes ?? {},
      this.onEnd,
    );
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...args: unknown[]): ReturnType<F> {
    const fn = args[args.length - 1] as F;
    const options = (args.length >= 2 ? args[0] : {}) as SpanOptions;
    const parent = (args.length >= 3 ? args[1] : context.active()) as Context;
    const span = this.startSpan(name, options, parent);
    return context.with(trace.setSpan(parent, span), () => fn(span)) as ReturnType<F>;
  }
}

/** Collects every ended span; register it with `install()`. */
export class SpanRecorder implements TracerProvider {
  readonly spans: FinishedSpan[] = [];
  private readonly tracer = new RecordingTracer((s) => this.spans.push(s));

  getTracer(): Tracer {
    return this.tracer;
  }

  reset(): void {
    this.spans.length = 0;
  }
}

/** Keeps the active context across awaits (what @opentelemetry/context-async-hooks provides). */
export class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]) => this.with(ctx, () => (target as (...a: unknown[]) => unknown)(...args));
    return run as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

/** Registers a recorder and a context manager globally; `uninstall()` undoes both. */
export function installRecorder(): { recorder: SpanRecorder; uninstall(): void } {
  const recorder = new SpanRecorder();
  trace.setGlobalTracerProvider(recorder);
  context.setGlobalContextManager(new AsyncLocalContextManager());
  return {
    recorder,
    uninstall() {
      trace.disable();
      context.disable();
    },
  };
}
