// Rate limits and proxies of `strata serve`, from flags or the environment (flags win):
//   STRATA_RATE_LIMIT          requests per credential, `N/Ss` (default 1000/10s) or `off`
//   STRATA_AUTH_FAILURE_LIMIT  failed authentications per client IP, `N/Ss` (default 20/60s)
//   STRATA_REDIS_URL           redis://HOST:PORT: counters shared by every replica (default: in memory)
//   STRATA_TRUSTED_PROXIES     comma-separated addresses/CIDRs whose X-Forwarded-For is believed
// Limits are on by default on a network address; on loopback (one person's machine, tests) only when
// asked for.

import { isIP } from 'node:net';
import { Redis } from 'ioredis';
import { DEFAULT_RATE_LIMITS, parseRate, type RateLimitOptions } from '../control-api/rate-limits.js';
import { StrataError } from '../engine/errors.js';

export interface NetworkFlags {
  rateLimit?: string;
  authFailureLimit?: string;
  redis?: string;
  trustedProxies?: string;
}

export interface NetworkConfig {
  rateLimit: RateLimitOptions | undefined;
  trustedProxies: string[];
}

function invalid(field: string, message: string): StrataError {
  return new StrataError('INVALID_ARGUMENT', { message, details: { field } });
}

export function parseProxies(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => {
      const [address, bits, extra] = item.split('/');
      const family = isIP(address ?? '');
      const max = family === 4 ? 32 : 128;
      if (family === 0 || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max))) {
        throw invalid('trustedProxies', `'${item}' is not an address or CIDR`);
      }
      return item;
    });
}

export function networkFromConfig(flags: NetworkFlags, loopback: boolean, env: NodeJS.ProcessEnv = process.env): NetworkConfig {
  const trustedProxies = parseProxies(flags.trustedProxies ?? env['STRATA_TRUSTED_PROXIES'] ?? '');
  const rateText = flags.rateLimit ?? env['STRATA_RATE_LIMIT'];
  const rate = rateText === undefined ? (loopback ? null : { max: DEFAULT_RATE_LIMITS.max, windowMs: DEFAULT_RATE_LIMITS.windowMs }) : parseRate(rateText, 'rateLimit');
  if (rate === null) return { rateLimit: undefined, trustedProxies };
  const failureText = flags.authFailureLimit ?? env['STRATA_AUTH_FAILURE_LIMIT'];
  const failures = failureText === undefined ? { max: DEFAULT_RATE_LIMITS.authFailures, windowMs: DEFAULT_RATE_LIMITS.authFailureWindowMs } : parseRate(failureText, 'authFailureLimit');
  const redisUrl = flags.redis ?? env['STRATA_REDIS_URL'];
  let redis: Redis | undefined;
  if (redisUrl !== undefined && redisUrl !== '') {
    if (!/^rediss?:\/\//.test(redisUrl)) throw invalid('redis', 'the Redis URL must start with redis:// or rediss://');
    // Fail fast and never queue: a rate-limit check must not wait on a Redis that is down.
    redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2_000, enableOfflineQueue: false });
    redis.on('error', () => {}); // reported per request (skipOnError lets requests through); never crash
  }
  return {
    rateLimit: {
      max: rate.max,
      windowMs: rate.windowMs,
      authFailures: failures?.max ?? Number.MAX_SAFE_INTEGER,
      authFailureWindowMs: failures?.windowMs ?? DEFAULT_RATE_LIMITS.authFailureWindowMs,
      ...(redis === undefined ? {} : { redis }),
    },
    trustedProxies,
  };
}
