/**
 * The shape `demo --provider github|linear|jira` share: a provider's emulator started in this
 * process on 127.0.0.1 (a free port), the demo org's integration made afresh to read it with the
 * emulator's local credential, and what the run wrote to the provider's normalized tables.
 */
import type { Db } from '../../db/types.js';
import type { Engine } from '../../engine.js';
import type { NewIntegration } from '../../planning/integrations.js';
import { deleteIntegration } from '../../planning/integrations.js';
import { listIntegrations } from '../../store/integrations.js';
import type { EmulatedProvider } from './report.js';
import { DEMO_ORG } from './setup.js';

/** What `engine.createIntegration` needs besides the org and the name. */
export type DemoIntegrationSpec = Pick<NewIntegration, 'provider' | 'sources' | 'datasets' | 'config' | 'credential'>;

/** An emulator the demo started: its address, the integration that reads it, and how to stop it. */
export interface RunningEmulator {
  url: string;
  integration: DemoIntegrationSpec;
  close(): Promise<void>;
}

/** One provider's demo. */
/** How a demo integration signs in: the emulator's token, or (GitHub) as an App installation. */
export type DemoAuth = 'token' | 'app';

export interface EmulatorDemo {
  provider: EmulatedProvider;
  /** The provider's name in notes, e.g. "GitHub" ("GitHub emulator on …"). */
  label: string;
  /** The integration's name in the demo org, e.g. "Demo GitHub". */
  integrationName: string;
  /** What the notes and the summary call the emulator, e.g. "GitHub REST emulator". */
  emulatorName: string;
  /** The backfill window without --days: the emulator's days of activity and one more. */
  defaultDays: number;
  /** The normalized tables a sync writes, in the order the summary lists them. */
  tables: readonly string[];
  /**
   * Starts the emulator at its `small` scale with seed 7, so reruns land the same rows; `auth`
   * `app` (GitHub's only) signs in as an App installation instead of with a token.
   */
  start(auth?: DemoAuth): Promise<RunningEmulator>;
  /** The sign-ins it offers beyond a token. @default none */
  auths?: readonly DemoAuth[];
}

/**
 * The demo's integration, made afresh for this emulator (its address changes with every run): an
 * earlier one of the same name and provider is deleted with its synced data first. Runs an earlier
 * demo left unfinished must be cancelled before (the deletion refuses a busy integration).
 */
export async function recreateDemoIntegration(
  engine: Engine,
  demo: EmulatorDemo,
  emu: RunningEmulator,
  cancelOrphans: (integrationId: string) => Promise<unknown>,
): Promise<{ id: string; replaced: boolean }> {
  const existing = (await listIntegrations(engine.db, DEMO_ORG)).filter(
    (i) => i.name === demo.integrationName && i.provider === demo.provider,
  );
  for (const old of existing) {
    await cancelOrphans(old.id);
    await deleteIntegration(engine.db, old.id, { orgId: DEMO_ORG, purgeData: true });
  }
  const created = await engine.createIntegration({ orgId: DEMO_ORG, name: demo.integrationName, ...emu.integration });
  return { id: created.id, replaced: existing.length > 0 };
}

/** Rows of each of `tables` for the integration. One read-only statement per table. */
export async function normalizedRows(
  db: Db,
  integrationId: string,
  tables: readonly string[],
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) {
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
