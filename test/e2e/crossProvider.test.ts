/**
 * GitHub, Linear and Jira side by side: one engine (in-process broker, real PostgreSQL) with the
 * default providers backfills the three emulators' seeded data, then ONE query over work_items
 * gives each provider's cycle time (completed_at − started_at of done items; GitHub's start is its
 * first "in progress" labeled event), checked against the emulators' own records
 * (test/helpers/crossProviderExpected.ts); the work-item-metrics handler wrote daily rows for each
 * integration whose cycle times follow the same starts, and every status is one of the four
 * normalized ones.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { jiraDemoIntegration, startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { linearIntegrationFor, startLinearEmulator, type LinearEmulator } from '../../src/emulators/linear/index.js';
import {
  cycleFigures,
  dailyCycleTimes,
  githubItems,
  jiraItems,
  linearItems,
  type CycleFigures,
  type ExpectedItem,
  type Status,
} from '../helpers/crossProviderExpected.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-xprov';
const DAY = 86_400_000;
const DAYS = 10;
const PROVIDERS = ['github', 'jira', 'linear'] as const;
type Provider = (typeof PROVIDERS)[number];

/** Per provider: items, statuses, and the cycle times of done items that have a start. */
const CYCLE_QUERY = (table: string) => `
  SELECT provider,
         count(*)::int AS items,
         count(*) FILTER (WHERE status = 'todo')::int AS todo,
         count(*) FILTER (WHERE status = 'in_progress')::int AS in_progress,
         count(*) FILTER (WHERE status = 'done')::int AS done,
         count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
         count(*) FILTER (WHERE status NOT IN ('todo', 'in_progress', 'done', 'cancelled')
                            OR status IS NULL)::int AS other,
         count(*) FILTER (WHERE status = 'done' AND started_at IS NOT NULL)::int AS measured,
         coalesce(sum(round(extract(epoch FROM completed_at - started_at) * 1000))
                  FILTER (WHERE status = 'done'), 0)::float8 AS total_ms,
         min(round(extract(epoch FROM completed_at - started_at) * 1000))
           FILTER (WHERE status = 'done')::float8 AS min_ms,
         max(round(extract(epoch FROM completed_at - started_at) * 1000))
           FILTER (WHERE status = 'done')::float8 AS max_ms,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - started_at) / 3600)
           FILTER (WHERE status = 'done' AND started_at IS NOT NULL) AS p50_hours,
         count(*) FILTER (WHERE status = 'cancelled' AND completed_at IS NOT NULL)::int AS cancelled_closed,
         count(*) FILTER (WHERE status = 'done' AND completed_at IS NULL)::int AS done_unclosed
    FROM ${table}
   WHERE org_id = $1 AND integration_id = ANY($2::uuid[])
   GROUP BY provider
   ORDER BY provider`;

interface CycleRow {
  provider: Provider;
  items: number;
  todo: number;
  in_progress: number;
  done: number;
  cancelled: number;
  other: number;
  measured: number;
  total_ms: number;
  min_ms: number | null;
  max_ms: number | null;
  p50_hours: number | null;
  cancelled_closed: number;
  done_unclosed: number;
}

describe('three providers in one store: comparable cycle times', () => {
  let t: TestDatabase;
  let broker: InProcessBroker;
  let engine: Engine;
  let github: GithubEmulator;
  let linear: LinearEmulator;
  let jira: JiraEmulator;
  const integrations = new Map<Provider, string>();
  let rows: CycleRow[] = [];

  beforeAll(async () => {
    [github, linear, jira] = await Promise.all([
      startGithubEmulator({
        scale: {
          repos: 2,
          issues: 50,
          pulls: 4,
          maxComments: 1,
          maxReviews: 0,
          directCommits: 1,
          members: 3,
          days: DAYS,
        },
        seed: 51,
      }),
      startLinearEmulator({
        scale: { teams: 2, issues: 80, users: 4, projects: 2, cycles: 2, maxComments: 1, maxLabels: 2, days: DAYS },
        seed: 52,
      }),
      startJiraEmulator({
        scale: {
          projects: 2,
          issues: 80,
          users: 4,
          maxComments: 1,
          maxHistories: 2,
          longLists: 1,
          sprints: 2,
          days: DAYS,
        },
        seed: 53,
      }),
    ]);
    t = await createTestDatabase({ poolSize: 6 });
    broker = new InProcessBroker();
    engine = await Engine.open({
      settings: loadSettings({
        SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
        SYNC_UNIT_RUNNING_LEASE_SECONDS: '10',
        SYNC_RECONCILE_INTERVAL_SECONDS: '1',
        SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
        SYNCRELAY_SECRET_KEY: randomBytes(32).toString('base64'),
      }),
      db: t.db,
      broker,
      logger: silentLogger(),
      migrate: false,
    });
    engine.startWorker({ concurrency: 3 });
    await engine.startReconciler({ scheduler: false });
    await syncAll();
    const { rows: r } = await t.db.query<CycleRow>(CYCLE_QUERY(t.db.schema.table('work_items')), [
      ORG,
      [...integrations.values()],
    ]);
    rows = r;
  }, 60_000);

  afterAll(async () => {
    await engine?.close();
    await broker?.close();
    await Promise.all([github?.close(), linear?.close(), jira?.close()]);
    await t?.drop();
  });

  async function syncAll(): Promise<void> {
    const specs = {
      github: {
        provider: 'github',
        sources: github.data.repos.map((r) => `${github.data.org.login}/${r.name}`),
        datasets: ['work-items', 'work-item-history'],
        config: { baseUrl: github.url },
        credential: github.token,
      },
      linear: linearIntegrationFor(linear),
      jira: jiraDemoIntegration(jira),
    };
    const now = Date.now();
    const runs = await Promise.all(
      PROVIDERS.map(async (p) => {
        const integration = await engine.createIntegration({ orgId: ORG, name: `xprov-${p}`, ...specs[p] });
        integrations.set(p, integration.id);
        const run = await engine.trigger({
          orgId: ORG,
          integrationId: integration.id,
          mode: 'backfill',
          triggeredBy: 'backfill',
          since: new Date(Math.floor((now - (DAYS + 1) * DAY) / DAY) * DAY),
          before: new Date(now + 60_000),
        });
        return run.syncRunId;
      }),
    );
    const statuses = await waitFor(
      async () => {
        const { rows: r } = await t.db.query<{ status: string }>(
          `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = ANY($1::uuid[])`,
          [runs],
        );
        return r.every((x) => !['planned', 'dispatching'].includes(x.status)) ? r.map((x) => x.status) : null;
      },
      45_000,
      100,
    );
    expect(statuses).toEqual(['success', 'success', 'success']);
  }

  function seeded(p: Provider): ExpectedItem[] {
    if (p === 'github') return githubItems(github);
    if (p === 'linear') return linearItems(linear);
    return jiraItems(jira);
  }

  function expected(p: Provider): CycleFigures {
    return cycleFigures(seeded(p));
  }

  function stored(p: Provider): CycleRow {
    const row = rows.find((r) => r.provider === p);
    expect(row, `no work_items for ${p}`).toBeDefined();
    return row!;
  }

  it('one query gives each provider the cycle times of its emulator seeded data', () => {
    expect(rows.map((r) => r.provider)).toEqual([...PROVIDERS]);
    for (const p of PROVIDERS) {
      const want = expected(p);
      const got = stored(p);
      const statuses: Record<Status, number> = {
        todo: got.todo,
        in_progress: got.in_progress,
        done: got.done,
        cancelled: got.cancelled,
      };
      expect({ provider: p, items: got.items, statuses, other: got.other, doneUnclosed: got.done_unclosed }).toEqual({
        provider: p,
        items: want.items,
        statuses: want.statuses,
        other: 0,
        doneUnclosed: 0,
      });
      expect(
        { provider: p, measured: got.measured, total: got.total_ms, min: got.min_ms, max: got.max_ms },
        `${p} cycle times`,
      ).toEqual({ provider: p, measured: want.measured, total: want.totalMs, min: want.minMs, max: want.maxMs });
      if (want.p50Hours === null) expect(got.p50_hours).toBeNull();
      else expect(got.p50_hours).toBeCloseTo(want.p50Hours, 6);
    }
    // Every emulator seeds started, done and cancelled items: their cycle times are measured —
    // GitHub's from the first "in progress" labeled event, not from the issue's creation.
    expect(stored('github').measured).toBeGreaterThan(5);
    expect(stored('linear').measured).toBeGreaterThan(5);
    expect(stored('jira').measured).toBeGreaterThan(5);
    expect(stored('linear').cancelled + stored('jira').cancelled).toBeGreaterThan(0);
  });

  it('the work-item-metrics handler wrote daily figures for each integration', async () => {
    const ids = [...integrations.values()];
    const counts = await waitFor(
      async () => {
        const { rows: r } = await t.db.query<{ integration_id: string; days: number; completed: number }>(
          `SELECT integration_id, count(DISTINCT day)::int AS days, sum(items_completed)::int AS completed
             FROM ${t.db.schema.table('work_item_metrics_daily')}
            WHERE org_id = $1 AND integration_id = ANY($2::uuid[])
            GROUP BY integration_id`,
          [ORG, ids],
        );
        return r.length === ids.length ? r : null;
      },
      20_000,
      100,
    );
    for (const p of PROVIDERS) {
      const c = counts.find((x) => x.integration_id === integrations.get(p))!;
      expect(c.days, p).toBeGreaterThanOrEqual(DAYS);
      expect(c.completed, p).toBeGreaterThan(0);
    }
  });

  it("the handler's daily cycle times follow each emulator's starts (GitHub's label events included)", async () => {
    type Day = { day: string; p50: number | null; p90: number | null };
    for (const p of PROVIDERS) {
      const { rows: days } = await t.db.query<Day>(
        `SELECT DISTINCT ON (day) to_char(day, 'YYYY-MM-DD') AS day,
                cycle_time_p50_hours AS p50, cycle_time_p90_hours AS p90
           FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE org_id = $1 AND integration_id = $2
          ORDER BY day, computed_at DESC`,
        [ORG, integrations.get(p)],
      );
      const want = dailyCycleTimes(seeded(p));
      expect(days.length, p).toBeGreaterThanOrEqual(DAYS);
      expect(
        [...want.keys()].every((d) => days.some((x) => x.day === d)),
        `${p}: every completion day`,
      ).toBe(true);
      for (const d of days) {
        const w = want.get(d.day);
        expect({ p, day: d.day, measured: d.p50 !== null }).toEqual({ p, day: d.day, measured: w !== undefined });
        if (!w) continue;
        expect(d.p50, `${p} ${d.day} p50`).toBeCloseTo(w.p50, 6);
        expect(d.p90, `${p} ${d.day} p90`).toBeCloseTo(w.p90, 6);
      }
    }
  });

  // docs/normalized-store.md: completed_at is when the item closed, done or cancelled — on every
  // provider (Linear's canceledAt, Jira's move into a done-category status resolved "Won't Do",
  // GitHub's not_planned close).
  it('cancelled items carry their close time on every provider (documented rule)', () => {
    for (const p of PROVIDERS) {
      expect({ provider: p, cancelledClosed: stored(p).cancelled_closed }).toEqual({
        provider: p,
        cancelledClosed: expected(p).cancelledClosed,
      });
    }
  });
});
