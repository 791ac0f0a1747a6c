/** Time comes from a Clock so tests can move it to an exact instant. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to (tests). */
export class ManualClock implements Clock {
  private ms: number;
  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    this.ms = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(at: Date | number): void {
    this.ms = typeof at === 'number' ? at : at.getTime();
  }
}

/** `now` plus `ms` milliseconds. */
export function after(now: Date, ms: number): Date {
  return new Date(now.getTime() + ms);
}
