/**
 * `syncrelay demo --provider linear`: the Linear GraphQL emulator's `small` workspace (2 teams,
 * 120 issues over 30 days), read for every Linear dataset with the emulator's personal API key.
 */
import { LINEAR_TABLES, linearIntegrationFor, startLinearEmulator } from '../../emulators/linear/index.js';
import type { EmulatorDemo } from './emulated.js';

export const LINEAR_DEMO: EmulatorDemo = {
  provider: 'linear',
  label: 'Linear',
  integrationName: 'Demo Linear (emulator)',
  emulatorName: 'Linear GraphQL emulator',
  defaultDays: 31,
  tables: LINEAR_TABLES,
  async start() {
    const emu = await startLinearEmulator({ host: '127.0.0.1', port: 0, seed: 7, scale: 'small' });
    return { url: emu.url, integration: linearIntegrationFor(emu), close: () => emu.close() };
  },
};
