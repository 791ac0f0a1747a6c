/**
 * `syncrelay demo --provider jira`: the Jira Cloud emulator's `small` site (2 projects, 120 issues
 * over 30 days), read with the emulator's `email:api_token` credential.
 */
import { JIRA_TABLES, jiraDemoIntegration, startJiraEmulator } from '../../emulators/jira/index.js';
import type { EmulatorDemo } from './emulated.js';

export const JIRA_DEMO: EmulatorDemo = {
  provider: 'jira',
  label: 'Jira',
  integrationName: 'Demo Jira',
  emulatorName: 'Jira Cloud REST emulator',
  defaultDays: 31,
  tables: JIRA_TABLES,
  async start() {
    const emu = await startJiraEmulator({ host: '127.0.0.1', port: 0, seed: 7, scale: 'small' });
    return { url: emu.url, integration: jiraDemoIntegration(emu), close: () => emu.close() };
  },
};
