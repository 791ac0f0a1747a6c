/**
 * The injected faults of an emulator (GitHub, Linear, Jira alike). Each applies to the requests
 * its `applies` test accepts (a path or operation it names, all when it names none): to the next
 * `count` of them, or to each with `probability` (a generator seeded from the emulator's seed, so a
 * run is repeatable), or to every one when neither is given. Emulators only: never the engine.
 */
import { Rng } from './random.js';

/** What every emulator's fault spec has. */
export interface DeckFault {
  kind: string;
  count?: number;
  probability?: number;
  /** A `slow` fault's delay. */
  delayMs?: number;
}

interface Armed<S> {
  spec: S;
  left: number | null;
}

export class FaultDeck<S extends DeckFault> {
  private armed: Armed<S>[] = [];
  private readonly rng: Rng;

  constructor(
    seed: number,
    private readonly validate: (fault: S, field: string) => S,
    private readonly applies: (fault: S, target: string) => boolean,
    faults: readonly S[] = [],
  ) {
    this.rng = new Rng(seed, 'faults');
    this.set(faults);
  }

  /** Replaces the faults (validated first: a bad one changes nothing). */
  set(faults: readonly S[]): void {
    const checked = faults.map((f, i) => this.validate(f, `faults[${i}]`));
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

  private fires(a: Armed<S>): boolean {
    if (a.left !== null) {
      if (a.left <= 0) return false;
      a.left--;
      return true;
    }
    return a.spec.probability === undefined || this.rng.next() < a.spec.probability;
  }
}
