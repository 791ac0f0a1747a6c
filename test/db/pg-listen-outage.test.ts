/**
 * Subscriptions made while PostgreSQL is unreachable (found by a soak: a replacement reconciler
 * started during a PostgreSQL stop exited with "Client was closed and is not queryable"). A
 * reconciler subscribes twice in a row at start — its relay channel, then its scheduler's — and the
 * second call was handed the LISTEN connection the first had just failed to open. A proxy in front
 * of the test server refuses connections while "down", so the window is hit every time.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDb } from '../../src/db/pg.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

/** A TCP proxy to `target` that can be taken down (refusing, its connections cut) and brought back on the same port. */
class SwitchableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => this.sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function proxiedUrl(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

describe('PgDb.listen while PostgreSQL is unreachable', () => {
  let t: TestDatabase;
  let proxy: SwitchableProxy;
  let db: PgDb;

  beforeAll(async () => {
    t = await createTestDatabase();
    const target = new URL(t.url);
    proxy = new SwitchableProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.up();
    db = new PgDb({ connectionString: proxiedUrl(t.url, proxy.port), max: 2, applicationName: 'syncrelay-test-proxy' });
    await db.query('SELECT 1');
  });

  afterAll(async () => {
    await db?.close();
    await proxy?.down();
    await t?.drop();
  });

  it('two subscriptions in a row both stand, and both are heard once the server is back', async () => {
    await proxy.down();
    await expect(db.query('SELECT 1')).rejects.toThrow();
    const heard: string[] = [];
    // What a reconciler's start does: its relay channel, then at once its scheduler's.
    await db.listen('outage_first', (p) => heard.push(`first:${p}`));
    await db.listen('outage_second', (p) => heard.push(`second:${p}`));
    // And a third while the listener's reconnect may be opening its connection.
    const third = db.listen('outage_third', (p) => heard.push(`third:${p}`));
    await proxy.up();
    await third;

    for (const channel of ['first', 'second', 'third']) {
      await waitFor(
        async () => {
          await db.query('SELECT pg_notify($1, $2)', [`outage_${channel}`, 'back']).catch(() => undefined);
          await new Promise((r) => setTimeout(r, 50));
          return heard.includes(`${channel}:back`);
        },
        15_000,
        0,
      );
    }
    expect(new Set(heard)).toEqual(new Set(['first:back', 'second:back', 'third:back']));
  });

  it('subscriptions made while a connection is being opened share it', async () => {
    const heard: string[] = [];
    const fresh = new PgDb({
      connectionString: proxiedUrl(t.url, proxy.port),
      max: 1,
      applicationName: 'syncrelay-test-fresh',
    });
    try {
      await Promise.all(['x', 'y', 'z'].map((c) => fresh.listen(`opening_${c}`, (p) => heard.push(`${c}:${p}`))));
      const { rows } = await fresh.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'syncrelay-test-fresh-listen'`,
      );
      expect(rows[0]!.n).toBe(1);
      for (const c of ['x', 'y', 'z']) await fresh.query('SELECT pg_notify($1, $2)', [`opening_${c}`, 'now']);
      await waitFor(async () => heard.length === 3, 15_000, 50);
      expect(heard.sort()).toEqual(['x:now', 'y:now', 'z:now']);
    } finally {
      await fresh.close();
    }
  });
});
