/** The one Broker interface: BullMQ on Redis in production, in-process when embedded. */

export const TASK_NAMES = ['dispatch_sync_run', 'run_sync_unit', 'finalize_sync_run', 'post_sync'] as const;
export type TaskName = (typeof TASK_NAMES)[number];

export interface TaskPayload {
  orgId: string;
  runId: string;
  /** run_sync_unit of one unit. */
  unitId?: string;
  /** run_sync_unit of several units of the run, claimed together (each by its own CAS). */
  unitIds?: string[];
  /** W3C trace context of the trigger, if any. */
  trace?: Record<string, string>;
}

export interface TaskMessage {
  name: TaskName;
  payload: TaskPayload;
  /**
   * Broker job id: publishing the same id again while the job is known to the broker is a no-op.
   * Derived from (outbox id, claim token) for outbox kinds.
   */
  jobId: string;
}

export type TaskHandler = (msg: TaskMessage) => Promise<void>;

export interface ConsumeOptions {
  /** Messages handled at once. @default 1 */
  concurrency: number;
}

export interface Consumer {
  /** Number of messages being handled right now. */
  inFlight(): number;
  /**
   * Stops taking new messages and waits for in-flight handlers (they receive no new work);
   * safe to call twice.
   */
  close(): Promise<void>;
}

export interface Broker {
  readonly kind: 'bullmq' | 'inprocess';
  /** Publishes all messages, or throws `BrokerError` (some may have been published: duplicates are harmless). */
  publish(messages: readonly TaskMessage[]): Promise<void>;
  /** Starts handling messages; a handler that throws is logged by the caller, never retried by the broker. */
  consume(handler: TaskHandler, options: ConsumeOptions): Consumer;
  /** Resolves when the broker is reachable; throws `BrokerError` otherwise. */
  ping(): Promise<void>;
  /** Closes connections; safe to call twice. */
  close(): Promise<void>;
}
