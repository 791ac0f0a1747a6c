/**
 * Injected faults. Each applies to requests whose operation name contains `operation` (all when
 * absent): to the next `count` of them, or to each with `probability` (drawn from a generator
 * seeded from the emulator's seed), or to every one when neither is given.
 */
import { FaultDeck } from '../core/faultDeck.js';
import { validateLinearFault, type LinearFaultSpec } from './options.js';

export class LinearFaults extends FaultDeck<LinearFaultSpec> {
  constructor(seed: number, faults: readonly LinearFaultSpec[] = []) {
    super(seed, validateLinearFault, (f, target) => f.operation === undefined || target.includes(f.operation), faults);
  }
}
