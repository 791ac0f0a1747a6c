/**
 * `syncrelay start` on the embedded defaults serves the dashboard and the API next to the worker
 * and the reconciler, prints where, and closes the server on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, removeDir, runCli, startCli, tempDir, until } from '../cli/helpers.js';

let dir: string;
beforeAll(async () => {
  dir = await tempDir('dashboard-start');
});
afterAll(async () => {
  await removeDir(dir);
});

describe('syncrelay start serves the dashboard', () => {
  it('serves /, its assets and the API on --port, then stops on SIGTERM', { timeout: 240_000 }, async () => {
    const env = { SYNCRELAY_DATA_DIR: `${dir}/data` };
    // The embedded database admits one process: the token is made before `start`.
    const created = await runCli(['tokens', 'create', '--org', 'acme', '--scopes', 'read', '--json'], {
      env,
      cwd: dir,
      timeoutMs: 120_000, // a fresh embedded database is created and migrated first: slow on a loaded machine
    });
    expect(created.code, created.stderr).toBe(0);
    const token = parseJson<{ token: string }>(created.stdout).token;

    const svc = startCli(['start', '--port', '0', '--concurrency', '2'], { env, cwd: dir, timeoutMs: 180_000 });
    let url = '';
    try {
      await until(
        () => {
          const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*"msg":"syncrelay started"/.exec(svc.stderr());
          if (m) url = m[1]!;
          return url !== '';
        },
        120_000,
        'syncrelay started',
      );

      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      const html = await page.text();
      expect(html).toContain('<script type="module" src="/dashboard/app.js">');
      expect(html).not.toMatch(/<script>|https?:\/\//);

      const js = await fetch(`${url}/dashboard/app.js`);
      expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(await js.text()).toContain('sessionStorage');
      expect((await fetch(`${url}/dashboard/style.css`)).headers.get('content-type')).toMatch(/^text\/css/);

      expect((await fetch(`${url}/dashboard/session`)).status).toBe(401);
      const session = await fetch(`${url}/dashboard/session`, { headers: { authorization: `Bearer ${token}` } });
      expect(await session.json()).toMatchObject({ org_id: 'acme', scopes: ['read'] });
      const runs = await fetch(`${url}/api/v1/job-runs`, { headers: { authorization: `Bearer ${token}` } });
      expect(runs.status).toBe(200);
    } finally {
      svc.child.kill('SIGTERM');
    }
    const done = await svc.exited;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`dashboard: ${url}/`);
    expect(done.stderr).toContain('"syncrelay stopped"');
    await expect(fetch(`${url}/`)).rejects.toThrow();
  });
});
