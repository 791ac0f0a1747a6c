/**
 * Request budgets, kept by @fastify/rate-limit. A request with a live token is counted against
 * that token's id. A request that fails authentication (no token; a malformed, unknown or revoked
 * one) is counted against its client address on a stricter budget, and that budget is checked
 * before the token is looked up: once an address has used it up, its requests answer 429 without
 * a database lookup, whatever token they send. With Redis the counters live there under a key
 * prefix of this install, so every replica counts together.
 */
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import { guardRedisErrors, redisOptions, type RedisTls } from '../broker/redisOptions.js';
import { describeError } from '../errors.js';
import { ApiError } from './errors.js';

export interface RateLimitOptions {
  /** Requests per token per window. */
  max: number;
  /** The window, in ms. */
  timeWindowMs: number;
  /** Failed authentications per client address per window. @default a tenth of `max`, at least 1 */
  authFailureMax?: number;
  /**
   * Keep the counters in this Redis, shared by every replica using the same URL and key prefix;
   * `null` keeps them in this process. @default REDIS_URL when set, else in this process
   */
  redisUrl?: string | null;
  /** TLS options for a `rediss://` URL, the same as the broker's. @default REDIS_TLS_CA_FILE / REDIS_TLS_SERVERNAME */
  redisTls?: RedisTls;
  /** Prefix of the counters' Redis keys. @default `<SYNCRELAY_QUEUE_PREFIX>:rate-limit:` */
  keyPrefix?: string;
}

/** What the auth hook asks of the budgets. */
export interface RequestLimits {
  /** 429 when the request's address has used up its failed-authentication budget; counts nothing. */
  checkAddress(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** Counts a failed authentication against the request's address. */
  countFailure(request: FastifyRequest): Promise<void>;
  /** Counts an authenticated request (`request.principal` set) against its token; 429 past the budget. */
  countToken(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

const TOKEN_KEY = 'token:';
const ADDRESS_KEY = 'addr:';

/** Counted per token id once authenticated, per client address before (IPv6 per /64, as the plugin does). */
function limitKey(request: FastifyRequest): string {
  const p = request.principal;
  return p ? `${TOKEN_KEY}${p.tokenId}` : `${ADDRESS_KEY}${normalizeIP(request.ip)}`;
}

/**
 * Registers @fastify/rate-limit (no global hook: the auth hook calls the returned budgets) and,
 * with a Redis URL, a client the server closes with itself. A Redis outage lets requests through
 * (logged) rather than failing them.
 */
export async function installRequestLimits(
  app: FastifyInstance,
  opts: RateLimitOptions & { keyPrefix: string },
): Promise<RequestLimits> {
  const failureMax = opts.authFailureMax ?? Math.max(1, Math.floor(opts.max / 10));
  const redis = opts.redisUrl ? await openRedis(app, opts.redisUrl, opts.redisTls) : null;
  await app.register(rateLimit, {
    global: false,
    max: (_request: FastifyRequest, key: string) => (key.startsWith(TOKEN_KEY) ? opts.max : failureMax),
    timeWindow: opts.timeWindowMs,
    keyGenerator: limitKey,
    ...(redis ? { redis, nameSpace: opts.keyPrefix, skipOnError: true } : {}),
  });
  const limit = app.createRateLimit();
  return {
    async checkAddress(request, reply) {
      const r = await limit(request, { increment: false });
      if (!r.isAllowed && r.remaining <= 0) {
        throw tooMany(reply, r, 'too many failed authentications from this address');
      }
    },
    async countFailure(request) {
      await limit(request);
    },
    async countToken(request, reply) {
      const r = await limit(request);
      if (r.isAllowed) return;
      reply.header('x-ratelimit-limit', r.max);
      reply.header('x-ratelimit-remaining', r.remaining);
      reply.header('x-ratelimit-reset', r.ttlInSeconds);
      if (r.isExceeded) throw tooMany(reply, r, 'rate limit exceeded');
    },
  };
}

interface Counted {
  max: number;
  ttlInSeconds: number;
}

/** The 429 in the API's error shape, with Retry-After. */
function tooMany(reply: FastifyReply, r: Counted, what: string): ApiError {
  const seconds = Math.max(1, r.ttlInSeconds);
  reply.header('x-ratelimit-limit', r.max);
  reply.header('x-ratelimit-remaining', 0);
  reply.header('x-ratelimit-reset', seconds);
  reply.header('retry-after', seconds);
  return new ApiError(429, 'rate_limited', `${what}, retry in ${retryIn(seconds)}`, {
    limit: r.max,
    retry_after_seconds: seconds,
  });
}

/** 42 → "42 seconds", 90 → "2 minutes". */
function retryIn(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.round(seconds / 60);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

/**
 * A Redis client for the counters: commands fail at once while it is disconnected (the limiter then
 * lets the request through) instead of queueing behind a reconnect. Closed with the server.
 */
async function openRedis(app: FastifyInstance, url: string, tls: RedisTls | undefined): Promise<Redis> {
  const options = { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5000 };
  const redis = guardRedisErrors(new Redis(url, redisOptions(url, tls, options)));
  let down = false;
  redis.on('error', (err: Error) => {
    if (!down) app.log.warn({ err: describeError(err) }, 'rate limits: Redis unreachable, requests are not limited');
    down = true;
  });
  redis.on('ready', () => {
    if (down) app.log.info('rate limits: Redis reachable again');
    down = false;
  });
  app.addHook('onClose', async () => {
    redis.disconnect();
  });
  await redis.connect().catch(() => undefined); // logged by the error handler; it keeps reconnecting
  return redis;
}
