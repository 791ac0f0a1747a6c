/**
 * The durable-commit ceiling of this machine's PostgreSQL right now: single-row UPDATE commits
 * per second over 16 connections, each autocommitting on its own row (synchronous_commit as the
 * server has it), for a fixed time.
 */
import pg from 'pg';

export const CEILING_CONNECTIONS = 16;

export async function commitsPerSecond(url: string, ms: number): Promise<number> {
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query('CREATE TABLE IF NOT EXISTS bench_commit_probe (id int PRIMARY KEY, n bigint NOT NULL)');
  await setup.query(
    'INSERT INTO bench_commit_probe SELECT i, 0 FROM generate_series(1, $1) i ON CONFLICT (id) DO NOTHING',
    [CEILING_CONNECTIONS],
  );
  const clients = await Promise.all(
    Array.from({ length: CEILING_CONNECTIONS }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  try {
    let commits = 0;
    const start = performance.now();
    const deadline = start + ms;
    await Promise.all(
      clients.map(async (c, i) => {
        while (performance.now() < deadline) {
          await c.query('UPDATE bench_commit_probe SET n = n + 1 WHERE id = $1', [i + 1]);
          commits += 1;
        }
      }),
    );
    return (commits / (performance.now() - start)) * 1000;
  } finally {
    await Promise.all(clients.map((c) => c.end()));
    await setup.query('VACUUM bench_commit_probe');
    await setup.end();
  }
}
