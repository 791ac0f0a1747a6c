import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whenDatabaseAnswers } from '../../src/db/startup.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { silentLogger } from '../../src/logger.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** A Db whose first `failures` statements or transactions fail as if PostgreSQL were down. */
function downAtFirst(inner: Db, failures: number): { db: Db; attempts: () => number } {
  let calls = 0;
  const gate = () => {
    calls += 1;
    if (calls <= failures) throw refused();
  };
  const db = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'query' || prop === 'transaction') {
        return (...args: unknown[]) => {
          gate();
          return (Reflect.get(target, prop, receiver) as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db, attempts: () => calls };
}

describe('start-up waits for the database', () => {
  it('runs the work again while the database is unavailable, then returns its result', async () => {
    let n = 0;
    const result = await whenDatabaseAnswers(
      async () => {
        n += 1;
        if (n < 4) throw refused();
        return 'up';
      },
      silentLogger(),
      { maxWaitMs: 5_000, pauseMs: 1 },
    );
    expect(result).toBe('up');
    expect(n).toBe(4);
  });

  it('passes any other error on at once', async () => {
    let n = 0;
    const broken = Object.assign(new Error('relation does not exist'), { code: '42P01' });
    await expect(
      whenDatabaseAnswers(
        async () => {
          n += 1;
          throw broken;
        },
        silentLogger(),
        { maxWaitMs: 5_000, pauseMs: 1 },
      ),
    ).rejects.toBe(broken);
    expect(n).toBe(1);
  });

  it('gives up with the outage error once the bound has passed', async () => {
    let n = 0;
    await expect(
      whenDatabaseAnswers(
        async () => {
          n += 1;
          throw refused();
        },
        silentLogger(),
        { maxWaitMs: 0, pauseMs: 1 },
      ),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(n).toBe(1);
  });

  describe('Engine.open', () => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await createTestDatabase();
    });
    afterAll(async () => {
      await t.drop();
    });

    it('opens once the database answers instead of failing on its first refused connection', async () => {
      const { db, attempts } = downAtFirst(t.db, 3);
      const engine = await Engine.open({
        settings: testSettings(),
        db,
        broker: new InProcessBroker(),
        logger: silentLogger(),
        startupWait: { maxWaitMs: 10_000, pauseMs: 1 },
      });
      await engine.close();
      expect(attempts()).toBeGreaterThan(3);
    });

    it('fails when the database stays away past the bound', async () => {
      const { db } = downAtFirst(t.db, 1_000_000);
      await expect(
        Engine.open({
          settings: testSettings(),
          db,
          broker: new InProcessBroker(),
          logger: silentLogger(),
          startupWait: { maxWaitMs: 0 },
        }),
      ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    });
  });
});
