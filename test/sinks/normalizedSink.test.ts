import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseLostError, ValidationError } from '../../src/errors.js';
import { normalizedSink, NORMALIZED_SURFACES, type NormalizedSink } from '../../src/sinks/normalized/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import {
  insertIntegration,
  insertRunningUnit,
  openPglite,
  openPostgres,
  testGuard,
  useSinkFixture,
  type OpenDb,
} from './normalizedHelpers.js';

const ORG = 'org-normalized';
const T0 = Date.UTC(2026, 0, 10, 12);

/** The binding checks, run against PostgreSQL and against PGlite. */
function bindingSuite(label: string, open: OpenDb): void {
  describe(`normalized sink binding (${label})`, () => {
    const f = useSinkFixture(open, ORG, new ManualClock(T0));

    const key = (externalId: string) => ({
      org_id: ORG,
      integration_id: f.integrationId,
      provider: 'github',
      external_id: externalId,
    });

    it('binds text[] values exactly, including commas, quotes, braces, backslashes and empty strings', async () => {
      const labels = ['a,b', 'say "hi"', '{x}', 'back\\slash', '', 'NULL', 'ünï 🚀', ' padded '];
      await f.sink.write(f.guard(), 'work_items', [
        { ...key('arr-1'), last_synced_at: new Date(T0), labels, assignees: [] },
        { ...key('arr-2'), last_synced_at: new Date(T0), labels: null },
      ]);
      const { rows } = await f.db.query<{ external_id: string; labels: string[]; assignees: string[] }>(
        `SELECT external_id, labels, assignees FROM ${f.db.schema.table('work_items')}
          WHERE external_id LIKE 'arr-%' ORDER BY external_id`,
      );
      expect(rows).toEqual([
        { external_id: 'arr-1', labels, assignees: [] },
        { external_id: 'arr-2', labels: [], assignees: [] },
      ]);
    });

    it('binds raw as jsonb (objects with arrays, top-level arrays and strings), never as a SQL array', async () => {
      const raws = [{ node_id: 'I_1', labels: [{ name: 'bug' }], nested: { n: [1, 2, null] } }, ['x', 1], 'just text'];
      await f.sink.write(
        f.guard(),
        'commits',
        raws.map((raw, i) => ({ ...key(`sha-${i}`), sha: `sha-${i}`, last_synced_at: new Date(T0), raw })),
      );
      const { rows } = await f.db.query<{ raw: unknown; kind: string }>(
        `SELECT raw, jsonb_typeof(raw) AS kind FROM ${f.db.schema.table('commits')} ORDER BY external_id`,
      );
      expect(rows.map((r) => r.raw)).toEqual(raws);
      expect(rows.map((r) => r.kind)).toEqual(['object', 'array', 'string']);
    });

    it('binds timestamps as the instants they name (Date, Z and offset strings), as timestamptz', async () => {
      await f.sink.write(f.guard(), 'pull_requests', [
        {
          ...key('pr-ts'),
          last_synced_at: new Date(T0),
          created_at: '2026-01-02T03:04:05Z',
          merged_at: '2026-01-02T05:04:05.250+0200',
          closed_at: new Date(Date.UTC(2026, 0, 2, 3, 30)),
        },
      ]);
      const { rows } = await f.db.query<{ created_at: Date; merged_at: Date; closed_at: Date; t: string }>(
        `SELECT created_at, merged_at, closed_at, pg_typeof(merged_at)::text AS t
           FROM ${f.db.schema.table('pull_requests')} WHERE external_id = 'pr-ts'`,
      );
      expect(rows[0]!.created_at.toISOString()).toBe('2026-01-02T03:04:05.000Z');
      expect(rows[0]!.merged_at.toISOString()).toBe('2026-01-02T03:04:05.250Z');
      expect(rows[0]!.closed_at.toISOString()).toBe('2026-01-02T03:30:00.000Z');
      expect(rows[0]!.t).toBe('timestamp with time zone');
    });
  });
}

bindingSuite('PostgreSQL', openPostgres);
bindingSuite('PGlite', openPglite);

describe('normalized sink upserts', () => {
  let t: TestDatabase;
  let sink: NormalizedSink;
  let integrationId: string;
  let unitId: string;
  const clock = new ManualClock(T0);
  const guard = () => testGuard(t.db, unitId, 'owner-a', clock);

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 2 });
    sink = normalizedSink(t.db);
    integrationId = await insertIntegration(t.db, ORG);
    unitId = await insertRunningUnit(t.db, ORG, integrationId, 'owner-a', new Date(T0 + 24 * 3_600_000));
  });
  afterAll(async () => {
    await t.drop();
  });
  beforeEach(async () => {
    clock.set(T0);
    for (const s of NORMALIZED_SURFACES) await t.db.query(`DELETE FROM ${t.db.schema.table(s)}`);
  });

  const items = (title = 'First') => [
    {
      org_id: ORG,
      integration_id: integrationId,
      provider: 'github',
      external_id: '1001',
      number: '7',
      title,
      type: 'issue',
      status: 'in_progress',
      status_raw: 'open',
      assignees: ['octocat'],
      labels: ['in progress', 'bug'],
      created_at: '2026-01-01T09:00:00Z',
      updated_at: '2026-01-05T09:00:00Z',
      started_at: '2026-01-02T09:00:00Z',
      container: 'acme/app',
      url: 'https://github.com/acme/app/issues/7',
      last_synced_at: clock.now(),
      raw: { node_id: 'I_kw7', reactions: { total: 2 } },
    },
  ];

  async function stored(): Promise<Record<string, unknown>[]> {
    const { rows } = await t.db.query<Record<string, unknown>>(
      `SELECT * FROM ${t.db.schema.table('work_items')} ORDER BY external_id`,
    );
    return rows;
  }

  it('declares every normalized surface and every one as retry-safe', () => {
    expect(sink.name).toBe('normalized');
    expect([...sink.surfaces].sort()).toEqual(
      [
        'commits',
        'members',
        'projects',
        'pull_request_reviews',
        'pull_requests',
        'repositories',
        'sprints',
        'teams',
        'work_item_comments',
        'work_item_events',
        'work_items',
      ].sort(),
    );
    expect(sink.retrySafeSurfaces).toEqual(sink.surfaces);
  });

  it('writing the same rows twice leaves identical state', async () => {
    expect(await sink.write(guard(), 'work_items', items())).toBe(1);
    const first = await stored();
    expect(await sink.write(guard(), 'work_items', items())).toBe(1);
    expect(await stored()).toEqual(first);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      title: 'First',
      assignees: ['octocat'],
      raw: { node_id: 'I_kw7', reactions: { total: 2 } },
    });
  });

  it('a later write moves last_synced_at and the values it carries; first_seen_at stays', async () => {
    await sink.write(guard(), 'work_items', items());
    const [before] = await stored();
    // first_seen_at comes from the database's own clock (DEFAULT now()); make sure time has moved there.
    await t.db.query('SELECT pg_sleep(0.01)');
    clock.advance(3_600_000);
    await sink.write(guard(), 'work_items', items('Renamed'));
    const [after] = await stored();
    expect(after!.first_seen_at).toEqual(before!.first_seen_at);
    expect((after!.last_synced_at as Date).getTime()).toBe(T0 + 3_600_000);
    expect((before!.last_synced_at as Date).getTime()).toBe(T0);
    expect(after!.title).toBe('Renamed');
    expect({ ...after, title: 0, last_synced_at: 0 }).toEqual({ ...before, title: 0, last_synced_at: 0 });
  });

  it('first_seen_at is not a column a row may carry', async () => {
    const row = { ...items()[0], first_seen_at: new Date(0) };
    await expect(sink.write(guard(), 'work_items', [row])).rejects.toMatchObject({
      field: 'work_items.first_seen_at',
    });
    expect(await stored()).toEqual([]);
  });

  it.each([
    ['work_items.status', { status: 'open' }],
    ['work_items.integration_id', { integration_id: 'not-a-uuid' }],
    ['work_items.number', { number: 7 }],
    ['work_items.labels[1]', { labels: ['ok', 3] }],
    ['work_items.created_at', { created_at: '2026-01-01 09:00:00' }],
    ['work_items.created_at', { created_at: 'yesterday' }],
    ['work_items.last_synced_at', { last_synced_at: null }],
    ['work_items.external_id', { external_id: '' }],
    ['work_items.colour', { colour: 'red' }],
  ])('refuses a bad %s with a ValidationError and writes nothing of the batch', async (field, patch) => {
    const good = { ...items()[0], external_id: 'good' };
    const err = await sink.write(guard(), 'work_items', [good, { ...items()[0], ...patch }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe(field);
    expect(await stored()).toEqual([]);
  });

  it('refuses bad pull request states, event kinds and integers', async () => {
    const base = {
      org_id: ORG,
      integration_id: integrationId,
      provider: 'github',
      external_id: 'x',
      last_synced_at: clock.now(),
    };
    await expect(sink.write(guard(), 'pull_requests', [{ ...base, state: 'draft' }])).rejects.toMatchObject({
      field: 'pull_requests.state',
    });
    await expect(sink.write(guard(), 'pull_requests', [{ ...base, additions: 2 ** 31 }])).rejects.toMatchObject({
      field: 'pull_requests.additions',
    });
    await expect(sink.write(guard(), 'work_item_events', [{ ...base, kind: 'moved' }])).rejects.toMatchObject({
      field: 'work_item_events.kind',
    });
    await expect(sink.write(guard(), 'issues', [base])).rejects.toMatchObject({ field: 'surface' });
  });

  it('drops NUL characters, which PostgreSQL text and jsonb cannot hold', async () => {
    await sink.write(guard(), 'work_item_comments', [
      {
        org_id: ORG,
        integration_id: integrationId,
        provider: 'github',
        external_id: 'c1',
        body: 'a\0b',
        last_synced_at: clock.now(),
        raw: { body: 'a\0b' },
      },
    ]);
    const { rows } = await t.db.query<{ body: string; raw: unknown }>(
      `SELECT body, raw FROM ${t.db.schema.table('work_item_comments')}`,
    );
    expect(rows).toEqual([{ body: 'ab', raw: { body: 'ab' } }]);
  });

  it('writes nothing once the lease is lost', async () => {
    clock.advance(48 * 3_600_000);
    await expect(sink.write(guard(), 'work_items', items())).rejects.toBeInstanceOf(LeaseLostError);
    expect(await stored()).toEqual([]);
  });
});
