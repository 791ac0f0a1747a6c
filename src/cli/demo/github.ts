/**
 * `syncrelay demo --provider github`: the GitHub emulator started in this process on 127.0.0.1 (a
 * free port), the demo org's GitHub integration pointed at it with the emulator's local token as
 * its credential, and what the run wrote to the normalized tables.
 */
import type { Db } from '../../db/types.js';
import type { Engine } from '../../engine.js';
import { startGithubEmulator, type GithubEmulator } from '../../providers/github/emulator/index.js';
import { deleteIntegration } from '../../planning/integrations.js';
import { listIntegrations } from '../../store/integrations.js';
import { DEMO_ORG } from './setup.js';

export const DEMO_GITHUB_INTEGRATION = 'Demo GitHub';
export const DEMO_GITHUB_DATASETS = [
  'repositories',
  'members',
  'work-items',
  'work-item-comments',
  'work-item-history',
  'pull-requests',
  'pull-request-reviews',
  'commits',
];
/** The normalized tables a GitHub sync writes, in the order the summary lists them. */
export const GITHUB_TABLES = [
  'repositories',
  'members',
  'work_items',
  'work_item_comments',
  'work_item_events',
  'pull_requests',
  'pull_request_reviews',
  'commits',
] as const;

/** The emulator's `small` organisation (3 repositories, 30 days of activity), seeded so reruns match. */
export function startDemoEmulator(): Promise<GithubEmulator> {
  return startGithubEmulator({ host: '127.0.0.1', port: 0, seed: 7, scale: 'small' });
}

/**
 * The demo GitHub integration, made afresh for this emulator (its address changes with every run):
 * an earlier one is deleted with its synced data first. Runs an earlier demo left unfinished must
 * be cancelled before (the deletion refuses a busy integration).
 */
export async function recreateDemoGithubIntegration(
  engine: Engine,
  emu: GithubEmulator,
  cancelOrphans: (integrationId: string) => Promise<unknown>,
): Promise<{ id: string; replaced: boolean }> {
  const existing = (await listIntegrations(engine.db, DEMO_ORG)).filter(
    (i) => i.name === DEMO_GITHUB_INTEGRATION && i.provider === 'github',
  );
  for (const old of existing) {
    await cancelOrphans(old.id);
    await deleteIntegration(engine.db, old.id, { orgId: DEMO_ORG, purgeData: true });
  }
  const created = await engine.createIntegration({
    orgId: DEMO_ORG,
    provider: 'github',
    name: DEMO_GITHUB_INTEGRATION,
    sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
    datasets: DEMO_GITHUB_DATASETS,
    config: { baseUrl: emu.url },
    credential: emu.token,
  });
  return { id: created.id, replaced: existing.length > 0 };
}

/** Rows of each normalized table for the integration. One read-only statement per table. */
export async function normalizedRows(db: Db, integrationId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of GITHUB_TABLES) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${db.schema.table(table)} WHERE integration_id = $1`,
      [integrationId],
    );
    out[table] = rows[0]?.n ?? 0;
  }
  return out;
}

/** The integration's work_item_metrics_daily rows and their computed_at generations. Locks nothing. */
export async function workItemMetricsRows(db: Db, integrationId: string) {
  const { rows } = await db.query<{ rows: number; generations: number }>(
    `SELECT count(*)::int AS rows, count(DISTINCT computed_at)::int AS generations
       FROM ${db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
    [integrationId],
  );
  return { rows: rows[0]?.rows ?? 0, generations: rows[0]?.generations ?? 0 };
}
