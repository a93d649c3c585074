// Rate limits (@fastify/rate-limit's counters, in memory or shared through Redis between replicas):
//
// - every request counts against its credential — the API key (by key id), else the person or
//   service signed in (by identity), else the client IP for public routes;
// - failed authentications count against the client IP in a stricter bucket, and once it is full
//   that IP is answered 429 before any credential is checked (guessing keys gets slow, not cheap);
// - the client IP is the socket's peer, or X-Forwarded-For only through the trusted proxies
//   (Fastify's trustProxy, configured with CIDRs).
//
// Every answer carries `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers), a
// 429 also `Retry-After`. The counters run before the body is read: a limited upload is not consumed.

import rateLimit from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { StrataError } from '../engine/errors.js';
import type { App } from './route-deps.js';

export interface RateLimitOptions {
  /** requests per window for one credential (or one IP on public routes) */
  max: number;
  windowMs: number;
  /** failed authentications per window from one IP */
  authFailures: number;
  authFailureWindowMs: number;
  /** shared counters between replicas; absent: in this process's memory */
  redis?: Redis;
}

export const DEFAULT_RATE_LIMITS: Omit<RateLimitOptions, 'redis'> = { max: 1_000, windowMs: 10_000, authFailures: 20, authFailureWindowMs: 60_000 };

type Limiter = (request: FastifyRequest, options?: { increment?: boolean }) => Promise<{
  isAllowed: boolean;
  isExceeded?: boolean;
  max?: number;
  remaining?: number;
  ttlInSeconds?: number;
  timeWindow?: number;
}>;

export interface AuthFailureGuard {
  /** 429 when the IP has used up its failed authentications */
  check(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** counts one failed authentication of the IP */
  failed(request: FastifyRequest): Promise<void>;
}

function limited(reply: FastifyReply, ttlInSeconds: number, bucket: string): StrataError {
  reply.header('retry-after', String(Math.max(1, ttlInSeconds)));
  return new StrataError('RATE_LIMITED', { message: `Too many requests: retry in ${Math.max(1, ttlInSeconds)} s`, details: { bucket, retryAfterSeconds: Math.max(1, ttlInSeconds) } });
}

function credentialKey(request: FastifyRequest): string {
  const principal = request.strata.principal;
  if (principal === null) return `ip:${request.ip}`;
  return principal.keyId !== null ? `key:${principal.keyId}` : `identity:${principal.identity.identityId}`;
}

/**
 * Registers the counters and the per-credential hook (run it after authentication). Returns the
 * guard the authentication hook uses for failures.
 */
export async function installRateLimits(app: App, options: RateLimitOptions): Promise<{ afterAuthentication: (request: FastifyRequest, reply: FastifyReply) => Promise<void>; authFailures: AuthFailureGuard }> {
  await app.register(rateLimit, {
    global: false,
    // Redis down must not take the API down: the request goes through uncounted (and is logged).
    skipOnError: true,
    ...(options.redis === undefined ? {} : { redis: options.redis, nameSpace: 'strata-rate-' }),
  });
  const perCredential = app.createRateLimit({ max: options.max, timeWindow: options.windowMs, keyGenerator: credentialKey }) as unknown as Limiter;
  const perFailingIp = app.createRateLimit({
    max: options.authFailures,
    timeWindow: options.authFailureWindowMs,
    keyGenerator: (request: FastifyRequest) => `auth-failures:${request.ip}`,
  }) as unknown as Limiter;
  const policy = `"default";q=${options.max};w=${Math.ceil(options.windowMs / 1000)}`;

  return {
    async afterAuthentication(request, reply) {
      const limit = await perCredential(request);
      if (limit.isAllowed) return;
      const ttl = limit.ttlInSeconds ?? Math.ceil(options.windowMs / 1000);
      reply.header('ratelimit-policy', policy);
      reply.header('ratelimit', `"default";r=${Math.max(0, limit.remaining ?? 0)};t=${ttl}`);
      if (limit.isExceeded === true) throw limited(reply, ttl, 'default');
    },
    authFailures: {
      async check(request, reply) {
        const status = await perFailingIp(request, { increment: false });
        // A peek reports exceeded only past max: the bucket is full at max failures.
        if (!status.isAllowed && (status.isExceeded === true || (status.remaining ?? 1) <= 0)) {
          const ttl = status.ttlInSeconds ?? Math.ceil(options.authFailureWindowMs / 1000);
          reply.header('ratelimit-policy', `"auth-failures";q=${options.authFailures};w=${Math.ceil(options.authFailureWindowMs / 1000)}`);
          reply.header('ratelimit', `"auth-failures";r=0;t=${ttl}`);
          throw limited(reply, ttl, 'auth-failures');
        }
      },
      async failed(request) {
        await perFailingIp(request);
      },
    },
  };
}

/** `N/Ws` (e.g. `1000/10s`, `20/60s`) or `off`. */
export function parseRate(text: string, field: string): { max: number; windowMs: number } | null {
  if (text === 'off') return null;
  const match = /^(\d{1,7})\/(\d{1,6})s$/.exec(text.trim());
  if (match === null || Number(match[1]) < 1 || Number(match[2]) < 1) {
    throw new StrataError('INVALID_ARGUMENT', { message: `${field} must be N/Ss (for example 1000/10s) or off, got '${text}'`, details: { field } });
  }
  return { max: Number(match[1]), windowMs: Number(match[2]) * 1000 };
}
