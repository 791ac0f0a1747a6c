/**
 * The admin dashboard: one HTML page, its ES modules and stylesheets served as public static
 * files (no build step), the domain's status lists as a second module built when the server is,
 * plus `GET /dashboard/session`, which tells the page who the pasted token is. Everything else the
 * page shows comes from the `/api/v1` endpoints, called with that token.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ApiPlugin } from '../api/plugin.js';
import { principalOf } from '../api/auth.js';
import { statusesModule } from './statuses.js';

/** The page's own policy: its files only, no inline code, no other origin (helmet's default also upgrades to https). */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const JAVASCRIPT = 'text/javascript; charset=utf-8';

/** A file of an installed package (the charting library), wherever the package is installed. */
const packageFile = (specifier: string): string => createRequire(import.meta.url).resolve(specifier);

/** URL path → file in the assets folder (or an absolute path: a package's file), with its content type. */
const FILES: Record<string, { file: string; type: string }> = {
  '/dashboard/activity.js': { file: 'activity.js', type: JAVASCRIPT },
  '/dashboard/charts.js': { file: 'charts.js', type: JAVASCRIPT },
  '/dashboard/budgets.js': { file: 'budgets.js', type: JAVASCRIPT },
  '/dashboard/data.js': { file: 'data.js', type: JAVASCRIPT },
  '/dashboard/dom.js': { file: 'dom.js', type: JAVASCRIPT },
  '/dashboard/vendor/uPlot.esm.js': { file: packageFile('uplot/dist/uPlot.esm.js'), type: JAVASCRIPT },
  '/dashboard/vendor/uPlot.min.css': { file: packageFile('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: 'app.js', type: JAVASCRIPT },
  '/dashboard/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/dashboard/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/**
 * Where the files are: `assets/` beside this module (src/ under tsx, dist/ once `npm run build`
 * copied them), else the source tree's copy seen from dist/.
 */
export function dashboardAssetsDir(): string {
  const candidates = [new URL('./assets/', import.meta.url), new URL('../../src/dashboard/assets/', import.meta.url)];
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  throw new Error(`dashboard assets not found (looked in ${candidates.map((u) => fileURLToPath(u)).join(', ')})`);
}

function send(reply: FastifyReply, type: string, body: Buffer): FastifyReply {
  return reply
    .header('content-type', type)
    .header('cache-control', 'no-cache')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .send(body);
}

function servePublic(app: FastifyInstance, url: string, type: string, body: Buffer): void {
  app.get(url, { config: { scope: 'public' }, logLevel: 'warn' }, async (_request, reply) => send(reply, type, body));
}

/** Serves the dashboard at `/` (files are read once, when the server is built). */
export function dashboardPlugin(opts: { assetsDir?: string } = {}): ApiPlugin {
  return (app: FastifyInstance) => {
    const dir = opts.assetsDir ?? dashboardAssetsDir();
    for (const [url, { file, type }] of Object.entries(FILES))
      servePublic(app, url, type, readFileSync(resolve(dir, file)));
    servePublic(app, '/dashboard/statuses.js', JAVASCRIPT, Buffer.from(statusesModule()));
    for (const url of ['/dashboard', '/dashboard/']) {
      app.get(url, { config: { scope: 'public' }, logLevel: 'warn' }, async (_request, reply) =>
        reply.redirect('/', 302),
      );
    }
    app.get('/dashboard/session', { config: { scope: 'read' }, logLevel: 'warn' }, async (request) => {
      const p = principalOf(request);
      return { org_id: p.orgId, scopes: p.scopes, token_id: p.tokenId };
    });
  };
}
