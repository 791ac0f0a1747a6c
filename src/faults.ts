import { InjectedFault } from './errors.js';

/**
 * Named fault points. Internal API: tests arm a point, the code calls `hit(point)` at the exact
 * line, and an armed point throws `InjectedFault` (a simulated crash) or runs a test callback.
 * A point is a hook on the production path: whether one is armed never changes which path runs.
 * Never exposed through public options.
 */
export type FaultPoint =
  | 'relay.afterClaim.beforePublish'
  | 'relay.afterPublish.beforeMark'
  | 'relay.postSync.afterMark.beforePublish'
  | 'dispatch.afterCommit.beforePublish'
  | 'unit.afterClaim'
  | 'unit.beforeComplete'
  | 'unit.afterComplete.beforeRecheck'
  | 'finalize.beforeCommit'
  | 'postSync.afterReceipt.beforeHandler'
  | 'postSync.afterHandlers.beforeAck'
  | 'reconciler.afterExpire';

type Action = 'throw' | ((point: FaultPoint) => void | Promise<void>);

export class Faults {
  private readonly armed = new Map<FaultPoint, { action: Action; times: number }>();

  /** Arm `point` for the next `times` hits (default once). */
  arm(point: FaultPoint, action: Action = 'throw', times = 1): void {
    this.armed.set(point, { action, times });
  }

  disarm(point: FaultPoint): void {
    this.armed.delete(point);
  }

  async hit(point: FaultPoint): Promise<void> {
    const entry = this.armed.get(point);
    if (!entry) return;
    entry.times -= 1;
    if (entry.times <= 0) this.armed.delete(point);
    if (entry.action === 'throw') throw new InjectedFault(point);
    await entry.action(point);
  }
}
