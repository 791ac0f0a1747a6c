/**
 * The injected faults of an emulator (GitHub, Linear, Jira alike). Each applies to the requests
 * whose target (a path, an operation name) contains the text of its match setting (all when it has
 * none): to the next `count` of them, or to each with `probability` (a generator seeded from the
 * emulator's seed, so a run is repeatable), or to every one when neither is given. Emulators
 * only: never the engine.
 */
import { validateFault, type FaultRules, type FaultSpecBase } from './faultSpec.js';
import { Rng } from './random.js';

interface Armed<S> {
  spec: S;
  left: number | null;
}

/** What a request met: the fault that answers it (if any) and the kind to log (`slow` when only delayed). */
export interface MetFault<S extends FaultSpecBase> {
  fault: S | null;
  injected: S['kind'] | null;
}

export class FaultDeck<S extends FaultSpecBase> {
  private armed: Armed<S>[] = [];
  private readonly rng: Rng;

  constructor(
    seed: number,
    private readonly rules: FaultRules<S>,
    faults: readonly S[] = [],
  ) {
    this.rng = new Rng(seed, 'faults');
    this.set(faults);
  }

  /** Replaces the faults (validated first: a bad one changes nothing). */
  set(faults: readonly S[]): void {
    const checked = faults.map((f, i) => validateFault(this.rules, f, `faults[${i}]`));
    this.armed = checked.map((spec) => ({ spec, left: spec.count ?? null }));
  }

  /** The faults this request meets: at most one that answers for it, plus any `slow` delay. */
  draw(target: string): { answer: S | null; delayMs: number } {
    let answer: S | null = null;
    let delayMs = 0;
    for (const a of this.armed) {
      if (!this.applies(a.spec, target)) continue;
      if (a.spec.kind !== 'slow' && answer) continue;
      if (!this.fires(a)) continue;
      if (a.spec.kind === 'slow') delayMs += a.spec.delayMs ?? 0;
      else answer = a.spec;
    }
    this.armed = this.armed.filter((a) => a.left === null || a.left > 0);
    return { answer, delayMs };
  }

  /** Draws for this request and waits out any `slow` delay (real time) before returning. */
  async meet(target: string): Promise<MetFault<S>> {
    const { answer, delayMs } = this.draw(target);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return { fault: answer, injected: answer?.kind ?? (delayMs > 0 ? 'slow' : null) };
  }

  private applies(spec: S, target: string): boolean {
    const text = spec[this.rules.match.field];
    return text === undefined || target.includes(String(text));
  }

  private fires(a: Armed<S>): boolean {
    if (a.left !== null) {
      if (a.left <= 0) return false;
      a.left--;
      return true;
    }
    return a.spec.probability === undefined || this.rng.next() < a.spec.probability;
  }
}
