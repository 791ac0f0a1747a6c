/** What the Jira provider's tests share: the emulator suite over a Jira emulator, units reading ENG. */
import { startJiraEmulator, type JiraEmulator, type JiraEmulatorOptions } from '../../../src/emulators/jira/index.js';
import { DAY, T0, useEmulatorSuite } from '../../helpers/emulatorSuite.js';
import type { UnitSpec, UnitTarget } from '../../helpers/unitContext.js';

/** A Jira unit reads the ENG project with the emulator's `email:api_token` credential. */
function target(emu: JiraEmulator): UnitTarget {
  return { provider: 'jira', config: { siteUrl: emu.url }, token: emu.token, sourceKey: 'ENG' };
}

/** The suite over a Jira emulator started with `defaults`; units read the 30 days before T0, `unit` on top. */
export function useJiraSuite(defaults: JiraEmulatorOptions, unit: Partial<UnitSpec> = {}) {
  const window = { since: new Date(T0 - 30 * DAY), before: new Date(T0) };
  return useEmulatorSuite({ start: startJiraEmulator, defaults, target, unit: { ...window, ...unit } });
}
