/** Redis housekeeping for the benchmarks: every measurement uses a prefix of its own, removed after. */
import { Redis } from 'ioredis';
import { REDIS_URL } from './pg.js';

/** Deletes every key under `prefix:` (SCAN + UNLINK in batches). */
export async function deletePrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
