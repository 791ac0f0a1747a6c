/**
 * `syncrelay webhooks deliveries`: the last 24 h summed up (counts, delivery-to-data p50/p95/max)
 * then the newest deliveries as a table, or both as JSON; `--status` and `--limit` narrow the list;
 * an unknown integration or status exits non-zero with one line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { seedIntegration, seedKnownWindow } from '../helpers/webhookDeliveries.js';
import { parseJson, runCli } from './helpers.js';

let t: TestDatabase;
let env: Record<string, string>;
let integrationId: string;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  env = { DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: uniquePrefix('cli-wh') };
  integrationId = await seedIntegration(t.db, 'org-cli');
  await seedKnownWindow(t.db, 'org-cli', integrationId, new Date());
});
afterAll(async () => {
  await t?.drop();
});

describe('webhooks deliveries', () => {
  it('prints the summary, delivery-to-data times included, then the newest deliveries', async () => {
    const r = await runCli(['webhooks', 'deliveries', '--integration', integrationId, '--limit', '5'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^deliveries since \d{4}-\d\d-\d\dT.*Z \(last 24 h\)$/);
    expect(r.stdout).toContain('by status      received 15 · duplicate 2 · rejected 1');
    expect(r.stdout).toContain('received       armed 11 · coalesced 2 · pending 1 · ignored 1');
    expect(r.stdout).toContain('runs armed     11');
    expect(r.stdout).toContain('delivery → data  p50 4.0 s · p95 10.0 s · max 10.0 s (12 deliveries)');
    const header = lines.findIndex((l) => l.startsWith('received '));
    expect(lines[header]).toMatch(/^received\s+status\s+outcome\s+event\s+source\s+delivery\s+run$/);
    const rows = lines.slice(header + 1).filter(Boolean);
    expect(rows).toHaveLength(5);
    // Newest first: the rejected delivery (10 min ago), the ignored one, the pending one, …
    expect(rows[0]).toMatch(/^\S+Z\s+rejected\s+-\s+-\s+-\s+-\s+-$/);
    expect(rows[1]).toMatch(/\sreceived\s+ignored\s+star\.opened\s+acme\/widgets\s/);
    expect(rows[2]).toMatch(/\sreceived\s+pending\s/);
  });

  it('prints JSON with --json, filtered by --status', async () => {
    const r = await runCli(
      ['webhooks', 'deliveries', '--integration', integrationId, '--status', 'duplicate', '--json'],
      { env },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = parseJson<{
      summary: Record<string, unknown>;
      deliveries: { status: string; cursor_us?: string; org_id?: string }[];
    }>(r.stdout);
    expect(out.summary).toMatchObject({
      integration_id: integrationId,
      statuses: { received: 15, duplicate: 2, rejected: 1 },
      runs_armed: 11,
      delivery_to_data: { samples: 12, p50_ms: 4000, p95_ms: 10_000, max_ms: 10_000 },
    });
    expect(out.deliveries.map((d) => d.status)).toEqual(['duplicate', 'duplicate']);
    expect(out.deliveries[0]).not.toHaveProperty('cursor_us');
  });

  it('refuses an unknown integration or status with one line', async () => {
    const missing = await runCli(['webhooks', 'deliveries', '--integration', '00000000-0000-4000-8000-000000000000'], {
      env,
    });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr.trim().split('\n')).toEqual([
      'syncrelay: no integration 00000000-0000-4000-8000-000000000000',
    ]);
    const bad = await runCli(['webhooks', 'deliveries', '--integration', integrationId, '--status', 'armed'], { env });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--status.*armed/);
  });
});
