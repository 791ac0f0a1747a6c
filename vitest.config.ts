import { defineConfig } from 'vitest/config';

/**
 * Two groups: everything else first (two files at a time), then the bounded chaos run on its own,
 * so its recovery-time invariant is measured on a machine the other suites are not loading.
 * The `pooler` project runs a core of the end-to-end and crash suites again with the engine's
 * connections through PgBouncer in transaction pooling mode (.ci/pgbouncer.ini, started by .ci/run).
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
        test: {
          name: 'pooler',
          include: [
            'test/e2e/inprocess.test.ts',
            'test/e2e/tworeconcilers.test.ts',
            'test/crash/outbox-relay.test.ts',
            'test/crash/finalize-postsync.test.ts',
            'test/crash/batched-units.test.ts',
          ],
          env: {
            SYNCRELAY_TEST_PG_POOLED: process.env.SYNCRELAY_TEST_PG_POOLED || 'postgres://postgres@127.0.0.1:6432',
          },
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
