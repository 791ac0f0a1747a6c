/** What the Linear provider's tests share: the emulator suite over a Linear emulator, units reading ENG. */
import {
  startLinearEmulator,
  type LinearEmulator,
  type LinearEmulatorOptions,
} from '../../../src/emulators/linear/index.js';
import { useEmulatorSuite } from '../../helpers/emulatorSuite.js';
import type { UnitSpec, UnitTarget } from '../../helpers/unitContext.js';

/** A Linear unit reads the ENG team with the emulator's personal API key. */
function target(emu: LinearEmulator): UnitTarget {
  return { provider: 'linear', config: { apiUrl: emu.url }, token: emu.token, sourceKey: 'ENG' };
}

/** The suite over a Linear emulator started with `defaults`; its units with `unit` (a window, datasets) on top. */
export function useLinearSuite(defaults: LinearEmulatorOptions, unit: Partial<UnitSpec> = {}) {
  return useEmulatorSuite({ start: startLinearEmulator, defaults, target, unit });
}
