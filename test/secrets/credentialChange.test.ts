/**
 * A credential the provider rotates (`UnitCredential.change`) on real PostgreSQL: the change runs
 * on the stored secret under its row lock and stores what it hands back in that transaction; a
 * second change waits for the first and sees its secret; a change that throws stores nothing; the
 * credential's id (row and version) stays, and a removed credential fails `auth`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { NonRetryableError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import {
  changeCredential,
  loadUnitCredential,
  revealCredential,
  unitCredential,
} from '../../src/secrets/credentials.js';
import { SecretKey } from '../../src/secrets/key.js';
import { deleteCredential, getCredential } from '../../src/store/credentials.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-cred-change';
let t: TestDatabase;
let engine: Engine;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 6 });
  engine = await Engine.open({
    settings: testSettings({ secretKey: SecretKey.generate() }),
    db: t.db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    migrate: false,
  });
});
afterAll(async () => {
  await engine?.close();
  await t?.drop();
});

async function integrationWith(credential: string): Promise<string> {
  const created = await engine.createIntegration({
    orgId: ORG,
    provider: 'synthetic',
    name: `change ${Math.random()}`,
    sources: ['s1'],
    datasets: ['teams'],
    config: { itemsPerDay: 1 },
    credential,
  });
  return created.id;
}

const store = () => ({ db: t.db, clock: systemClock });
const stored = async (id: string) => revealCredential(engine.ctx.secrets, (await getCredential(t.db, id))!);

describe('changing a stored credential', () => {
  it('stores the secret the change hands back; the id stays', async () => {
    const id = await integrationWith('rotating-1');
    const before = (await loadUnitCredential(t.db, engine.ctx.secrets, id))!;
    const seen = await changeCredential(store(), engine.ctx.secrets, id, async (current) => ({
      secret: 'rotating-2',
      value: current,
    }));
    expect(seen).toBe('rotating-1');
    expect(await stored(id)).toBe('rotating-2');
    expect((await loadUnitCredential(t.db, engine.ctx.secrets, id))!.id).toBe(before.id);
  });

  it('a second change waits for the first and sees its secret', async () => {
    const id = await integrationWith('r-0');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const firstIn = new Promise<void>((resolve) => (entered = resolve));
    const first = changeCredential(store(), engine.ctx.secrets, id, async (current) => {
      entered();
      await held;
      return { secret: `${current}+a`, value: current };
    });
    await firstIn;
    const order: string[] = [];
    const second = changeCredential(store(), engine.ctx.secrets, id, async (current) => {
      order.push(`second saw ${current}`);
      return { secret: `${current}+b`, value: current };
    });
    // The second waits on the row lock: a session of this database is seen waiting on a lock.
    await waitFor(async () => {
      const { rows } = await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      );
      return rows[0]!.n > 0 ? true : null;
    }, 5_000);
    expect(order).toEqual([]);
    release();
    expect(await first).toBe('r-0');
    expect(await second).toBe('r-0+a');
    expect(order).toEqual(['second saw r-0+a']);
    expect(await stored(id)).toBe('r-0+a+b');
  });

  it('a change that throws stores nothing; no secret handed back keeps the stored one', async () => {
    const id = await integrationWith('keep-me');
    await expect(
      changeCredential(store(), engine.ctx.secrets, id, async () => {
        throw new Error('token endpoint down');
      }),
    ).rejects.toThrow('token endpoint down');
    expect(await stored(id)).toBe('keep-me');
    expect(await changeCredential(store(), engine.ctx.secrets, id, async () => ({ value: 7 }))).toBe(7);
    expect(await stored(id)).toBe('keep-me');
  });

  it('a unit credential with a store offers change; a removed credential fails `auth`', async () => {
    const id = await integrationWith('soon-gone');
    const row = (await getCredential(t.db, id))!;
    expect(unitCredential(engine.ctx.secrets, row).change).toBeUndefined();
    const credential = unitCredential(engine.ctx.secrets, row, store());
    await t.db.transaction((tx) => deleteCredential(tx, ORG, id));
    const err = await credential.change!(async () => ({ value: 1 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NonRetryableError);
    expect((err as NonRetryableError).category).toBe('auth');
  });
});
