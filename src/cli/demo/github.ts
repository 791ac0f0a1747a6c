/**
 * `syncrelay demo --provider github`: the GitHub REST emulator's `small` organisation (3
 * repositories, 30 days of activity), read with the emulator's local token as the credential.
 */
import { DEMO_GITHUB_DATASETS, GITHUB_TABLES, startGithubEmulator } from '../../emulators/github/index.js';

export { DEMO_GITHUB_DATASETS, GITHUB_TABLES };
import type { EmulatorDemo } from './emulated.js';

export const GITHUB_DEMO: EmulatorDemo = {
  provider: 'github',
  label: 'GitHub',
  integrationName: 'Demo GitHub',
  emulatorName: 'GitHub REST emulator',
  defaultDays: 31,
  tables: GITHUB_TABLES,
  async start() {
    const emu = await startGithubEmulator({ host: '127.0.0.1', port: 0, seed: 7, scale: 'small' });
    return {
      url: emu.url,
      integration: {
        provider: 'github',
        sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
        datasets: DEMO_GITHUB_DATASETS,
        config: { baseUrl: emu.url },
        credential: emu.token,
      },
      close: () => emu.close(),
    };
  },
};
