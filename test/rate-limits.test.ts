// Rate limits: per credential, a stricter bucket for failed authentication per client IP (through
// trusted proxies only), the 429 body and headers, and counters shared between two servers through
// the Redis running on this machine.

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { openHarness } from './control-api-harness.js';

const WINDOW_MS = 60_000;

/** Polls until `check` holds (the counters live in real time, not the test's frozen clock). */
async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('rate limits', () => {
  it('count per credential: the 429 names the bucket and says when to retry; other keys are unaffected', async () => {
    const h = await openHarness({ rateLimit: { max: 6, windowMs: WINDOW_MS, authFailures: 50, authFailureWindowMs: WINDOW_MS } });
    try {
      const other = await h.createKey({ purpose: 'other', role: 'member' }); // the owner's request 1
      for (let i = 2; i <= 6; i += 1) {
        const ok = await h.request('GET', '/v1/projects');
        expect(ok.statusCode).toBe(200);
        expect(ok.headers['ratelimit-policy']).toBe('"default";q=6;w=60');
        expect(ok.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${6 - i};t=\\d+$`));
      }
      const limited = await h.request('GET', '/v1/projects');
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['ratelimit']).toMatch(/^"default";r=0;t=\d+$/);
      expect(limited.json().error).toMatchObject({ code: 'RATE_LIMITED', details: { bucket: 'default' } });
      // The limited request changed nothing and another credential goes on.
      expect((await h.request('GET', '/v1/projects', { key: other.apiKey })).statusCode).toBe(200);
      // Public routes count per client IP.
      expect((await h.request('GET', '/healthz', { key: null })).headers['ratelimit-policy']).toBe('"default";q=6;w=60');
    } finally {
      await h.dispose();
    }
  });

  it('failed authentications fill a stricter bucket per IP; then even a good key from that IP waits', async () => {
    const h = await openHarness({ rateLimit: { max: 1000, windowMs: WINDOW_MS, authFailures: 3, authFailureWindowMs: 1_000 } });
    try {
      for (let i = 0; i < 3; i += 1) expect((await h.request('GET', '/v1/projects', { key: `rk.test.${'a'.repeat(16)}.${'b'.repeat(43)}` })).statusCode).toBe(401);
      const blocked = await h.request('GET', '/v1/projects');
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json().error.details.bucket).toBe('auth-failures');
      expect(blocked.headers['ratelimit-policy']).toBe('"auth-failures";q=3;w=1');
      // Another address is not affected (over a trusted proxy the address is the forwarded one: below).
      await eventually(async () => (await h.request('GET', '/v1/projects')).statusCode === 200);
    } finally {
      await h.dispose();
    }
  });

  it('X-Forwarded-For is believed only from a trusted proxy', async () => {
    const bad = `rk.test.${'a'.repeat(16)}.${'b'.repeat(43)}`;
    const limits = { max: 1000, windowMs: WINDOW_MS, authFailures: 2, authFailureWindowMs: WINDOW_MS };
    const proxied = await openHarness({ rateLimit: limits, trustProxy: ['127.0.0.1/32'] });
    try {
      for (let i = 0; i < 2; i += 1) {
        await proxied.request('GET', '/v1/projects', { key: bad, headers: { 'x-forwarded-for': '10.0.0.1' } });
      }
      expect((await proxied.request('GET', '/v1/projects', { headers: { 'x-forwarded-for': '10.0.0.1' } })).statusCode).toBe(429);
      expect((await proxied.request('GET', '/v1/projects', { headers: { 'x-forwarded-for': '10.0.0.2' } })).statusCode).toBe(200);
    } finally {
      await proxied.dispose();
    }
    const direct = await openHarness({ rateLimit: limits });
    try {
      // Not trusted: a client cannot dodge the bucket by making up addresses.
      for (let i = 0; i < 2; i += 1) {
        await direct.request('GET', '/v1/projects', { key: bad, headers: { 'x-forwarded-for': `10.0.1.${i}` } });
      }
      expect((await direct.request('GET', '/v1/projects', { headers: { 'x-forwarded-for': '10.0.9.9' } })).statusCode).toBe(429);
    } finally {
      await direct.dispose();
    }
  });

  it('two servers share the counters through Redis', async () => {
    const redisA = new Redis({ host: '127.0.0.1', port: 6379, keyPrefix: `test-${randomUUID()}:`, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    const redisB = new Redis({ host: '127.0.0.1', port: 6379, keyPrefix: redisA.options.keyPrefix, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
    const a = await openHarness({ rateLimit: { max: 5, windowMs: WINDOW_MS, authFailures: 50, authFailureWindowMs: WINDOW_MS, redis: redisA } });
    // The second server serves the same home's credentials: its own app over the first one's engine.
    const { buildApp } = await import('../control-api/app.js');
    const b = await buildApp({
      engine: a.local.engine,
      repository: a.local.repository,
      pepper: a.access.pepper as Buffer,
      environment: 'test',
      clock: a.clock,
      rateLimit: { max: 5, windowMs: WINDOW_MS, authFailures: 50, authFailureWindowMs: WINDOW_MS, redis: redisB },
    });
    try {
      const viaB = () => b.inject({ method: 'GET', url: '/v1/projects', headers: { authorization: `Bearer ${a.ownerKey}` } });
      for (let i = 0; i < 3; i += 1) expect((await a.request('GET', '/v1/projects')).statusCode).toBe(200);
      expect((await viaB()).statusCode).toBe(200);
      expect((await viaB()).statusCode).toBe(200);
      expect((await viaB()).statusCode).toBe(429);
      expect((await a.request('GET', '/v1/projects')).statusCode).toBe(429);
    } finally {
      await b.close();
      await a.dispose();
      await redisA.quit();
      await redisB.quit();
    }
  });
});
