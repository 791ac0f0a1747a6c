/**
 * `syncrelay demo --provider github`: the GitHub REST emulator's `small` organisation (3
 * repositories, 30 days of activity), read with the emulator's local token as the credential —
 * or, with `--auth app`, as the emulator's GitHub App installation, its private key the credential.
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
  auths: ['token', 'app'],
  async start(auth = 'token') {
    const app = auth === 'app';
    const emu = await startGithubEmulator({
      host: '127.0.0.1',
      port: 0,
      seed: 7,
      scale: 'small',
      ...(app ? { app: {} } : {}),
    });
    // As an App: its key (made afresh by the emulator) is the credential, traded for installation tokens.
    const signIn = app
      ? {
          config: { auth: 'app', appId: emu.appId, installationId: emu.installationId },
          credential: emu.appPrivateKeyPem!,
        }
      : { config: {}, credential: emu.token };
    return {
      url: emu.url,
      integration: {
        provider: 'github',
        sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
        datasets: DEMO_GITHUB_DATASETS,
        config: { baseUrl: emu.url, ...signIn.config },
        credential: signIn.credential,
      },
      close: () => emu.close(),
    };
  },
};
