/** The `emulate` commands' webhook flags: the secret only from the environment, refused when missing. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../cli/helpers.js';

const HOOK = ['--webhook-url', 'http://127.0.0.1:9/hooks'];

describe('syncrelay emulate --webhook-*', () => {
  for (const provider of ['github', 'linear', 'jira']) {
    it(`emulate ${provider} refuses --webhook-url with an unset secret variable`, async () => {
      const unset = await runCli(['emulate', provider, ...HOOK, '--webhook-secret-env', 'SYNC_TEST_HOOK_UNSET']);
      expect(unset.code).not.toBe(0);
      expect(unset.stderr).toMatch(/SYNC_TEST_HOOK_UNSET is not set \(or empty\)/);
    });
  }

  it('refuses an empty secret variable and a --webhook-url without --webhook-secret-env', async () => {
    const empty = await runCli(['emulate', 'github', ...HOOK, '--webhook-secret-env', 'SYNC_TEST_HOOK'], {
      env: { SYNC_TEST_HOOK: '' },
    });
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toMatch(/SYNC_TEST_HOOK is not set \(or empty\)/);
    const missing = await runCli(['emulate', 'github', ...HOOK]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--webhook-url needs --webhook-secret-env/);
  });
});
