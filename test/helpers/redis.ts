import { Redis } from 'ioredis';
import { REDIS_URL } from './pg.js';

/** Deletes every Redis key matching `pattern` (e.g. a queue prefix's `srt-x-1a2b:*`). */
export async function deleteRedisKeys(pattern: string, redisUrl = REDIS_URL): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
