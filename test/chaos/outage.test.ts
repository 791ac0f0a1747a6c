/** The chaos command's own requests during an injected PostgreSQL outage: wait it out, never double a commit. */
import { describe, expect, it } from 'vitest';
import { PgOutage, throughOutage } from '../../src/chaos/outage.js';

describe('throughOutage', () => {
  it('waits for the outage to end before the first attempt', async () => {
    const outage = new PgOutage();
    outage.begin();
    const calls: string[] = [];
    const done = throughOutage(
      outage,
      async () => (calls.push('attempt'), 'ok'),
      async () => null,
    );
    await Promise.resolve();
    expect(calls).toEqual([]);
    outage.end();
    await expect(done).resolves.toBe('ok');
    expect(calls).toEqual(['attempt']);
  });

  it('an attempt cut off by an outage that had committed is adopted, not sent again', async () => {
    const outage = new PgOutage();
    let attempts = 0;
    const result = await throughOutage(
      outage,
      async () => {
        attempts += 1;
        outage.begin();
        outage.end(); // the server went away and came back while the request was in flight
        throw new Error('Connection terminated unexpectedly');
      },
      async () => 'run-made-by-the-cut-off-attempt',
    );
    expect({ result, attempts }).toEqual({ result: 'run-made-by-the-cut-off-attempt', attempts: 1 });
  });

  it('an attempt cut off by an outage that had not committed is sent again', async () => {
    const outage = new PgOutage();
    let attempts = 0;
    const result = await throughOutage(
      outage,
      async () => {
        attempts += 1;
        if (attempts === 1) {
          outage.begin();
          setTimeout(() => outage.end(), 5);
          throw new Error('connect ECONNREFUSED');
        }
        return 'second';
      },
      async () => null,
    );
    expect({ result, attempts }).toEqual({ result: 'second', attempts: 2 });
  });

  it('an error with no outage about is passed on at once', async () => {
    const outage = new PgOutage();
    let adopted = 0;
    await expect(
      throughOutage(
        outage,
        async () => {
          throw new Error('the cap is 4');
        },
        async () => ((adopted += 1), 'x'),
      ),
    ).rejects.toThrow('the cap is 4');
    expect(adopted).toBe(0);
  });
});
