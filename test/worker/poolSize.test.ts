import { describe, expect, it } from 'vitest';
import { MAX_POOL, MIN_SERVICE_POOL, WORKER_POOL_EXTRA, workerPoolSize } from '../../src/worker/poolSize.js';

describe("a worker process's default pool size", () => {
  it('is a connection per message slot plus the extra ones, never below the old 10, never above 1000', () => {
    expect(workerPoolSize(1)).toBe(MIN_SERVICE_POOL);
    expect(workerPoolSize(4)).toBe(10);
    expect(workerPoolSize(32)).toBe(32 + WORKER_POOL_EXTRA);
    expect(workerPoolSize(1000)).toBe(MAX_POOL);
  });
});
