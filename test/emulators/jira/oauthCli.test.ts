/**
 * `syncrelay emulate jira --oauth`: prints the OAuth config and credential; the token endpoint
 * rotates refresh tokens (a used one answers 403 `invalid_grant`), access tokens live `--token-ttl`,
 * reach the API only under the gateway path of the site's cloud id; bad flag combinations are refused.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../../cli/helpers.js';

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs');
const MAIN = join(ROOT, 'src/cli/main.ts');

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('syncrelay emulate jira --oauth', () => {
  it('serves rotating refresh tokens, accessible-resources and the gateway', { timeout: 60_000 }, async () => {
    const args = ['--import', TSX, MAIN, 'emulate', 'jira', '--port', '0', '--oauth', '--token-ttl', '120'];
    const child = spawn(process.execPath, args, { env: cleanEnv(), cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 55_000);
    try {
      const deadline = Date.now() + 40_000;
      while (!/OAuth 2\.0 credential/.test(stdout) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const config = JSON.parse(/OAuth 2\.0 config: (\{.*\})/.exec(stdout)![1]!) as Record<string, string>;
      const credential = JSON.parse(/OAuth 2\.0 credential.*?: (\{.*\})/.exec(stdout)![1]!) as Record<string, string>;
      expect(config.auth).toBe('oauth');
      const grant = {
        grant_type: 'refresh_token',
        client_id: credential.clientId,
        client_secret: credential.clientSecret,
        refresh_token: credential.refreshToken,
      };
      const first = await post(config.oauthTokenUrl!, grant);
      expect(first.status).toBe(200);
      const tokens = (await first.json()) as { access_token: string; refresh_token: string; expires_in: number };
      expect(tokens.expires_in).toBe(120);
      expect(tokens.refresh_token).not.toBe(credential.refreshToken);
      const reused = await post(config.oauthTokenUrl!, grant);
      expect(reused.status).toBe(403);
      expect(await reused.json()).toEqual({
        error: 'invalid_grant',
        error_description: 'Unknown or invalid refresh token.',
      });
      const bearer = { authorization: `Bearer ${tokens.access_token}` };
      const sites = (await (
        await fetch(`${config.apiGatewayUrl!}/oauth/token/accessible-resources`, { headers: bearer })
      ).json()) as { id: string; url: string }[];
      expect(sites.map((s) => s.url)).toEqual([config.siteUrl]);
      const me = await fetch(`${config.apiGatewayUrl!}/ex/jira/${sites[0]!.id}/rest/api/3/myself`, { headers: bearer });
      expect(me.status).toBe(200);
      // An access token is no site credential: refused on the site's own URL.
      expect((await fetch(`${config.siteUrl!}/rest/api/3/myself`, { headers: bearer })).status).toBe(401);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  });

  it('refuses --token-ttl without --oauth, a bad ttl, and --oauth with Data Center', { timeout: 60_000 }, async () => {
    const cases: [string[], string][] = [
      [['--token-ttl', '60'], '--token-ttl is for --oauth'],
      [['--oauth', '--token-ttl', '0'], '--token-ttl'],
      [['--oauth', '--flavor', 'datacenter'], '--oauth'],
    ];
    for (const [flags, says] of cases) {
      const r = await runCli(['emulate', 'jira', '--port', '0', ...flags]);
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toContain(says);
    }
  });
});
