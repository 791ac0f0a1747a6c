import { defineConfig } from 'vitest/config';

/**
 * Two groups: everything else first (two files at a time), then the bounded chaos run on its own,
 * so its recovery-time invariant is measured on a machine the other suites are not loading.
 */
export default defineConfig({
  test: {
    globalSetup: ['test/helpers/globalSetup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // The emulators listen on http://127.0.0.1: plain http to loopback is allowed (outbound.ts).
    env: { SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: '1' },
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: ['test/chaos/**'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'chaos', include: ['test/chaos/**/*.test.ts'], maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
