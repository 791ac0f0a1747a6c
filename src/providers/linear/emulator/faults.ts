/**
 * Injected faults. Each applies to requests whose operation name contains `operation` (all when
 * absent): to the next `count` of them, or to each with `probability` (drawn from a generator
 * seeded from the emulator's seed), or to every one when neither is given.
 */
import { Rng } from '../../github/emulator/random.js';
import { validateLinearFault, type LinearFaultSpec } from './options.js';

interface Armed {
  spec: LinearFaultSpec;
  left: number | null;
}

export class LinearFaults {
  private armed: Armed[] = [];
  private readonly rng: Rng;

  constructor(seed: number, faults: readonly LinearFaultSpec[] = []) {
    this.rng = new Rng(seed, 'faults');
    this.set(faults);
  }

  /** Replaces the faults (validated first: a bad one changes nothing). */
  set(faults: readonly LinearFaultSpec[]): void {
    const checked = faults.map((f, i) => validateLinearFault(f, `faults[${i}]`));
    this.armed = checked.map((spec) => ({ spec, left: spec.count ?? null }));
  }

  /** The faults this request meets: at most one that answers for it, plus any `slow` delay. */
  draw(operation: string): { answer: LinearFaultSpec | null; delayMs: number } {
    let answer: LinearFaultSpec | null = null;
    let delayMs = 0;
    for (const a of this.armed) {
      if (a.spec.operation !== undefined && !operation.includes(a.spec.operation)) continue;
      if (a.spec.kind !== 'slow' && answer) continue;
      if (!this.fires(a)) continue;
      if (a.spec.kind === 'slow') delayMs += a.spec.delayMs ?? 0;
      else answer = a.spec;
    }
    this.armed = this.armed.filter((a) => a.left === null || a.left > 0);
    return { answer, delayMs };
  }

  private fires(a: Armed): boolean {
    if (a.left !== null) {
      if (a.left <= 0) return false;
      a.left--;
      return true;
    }
    return a.spec.probability === undefined || this.rng.next() < a.spec.probability;
  }
}
