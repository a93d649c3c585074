// The principal cache answers a credential seen moments ago from memory; these are the ways it must
// never let a credential outlive what was done to it.

import { describe, expect, it } from 'vitest';
import type { Principal } from '../engine/access/context.js';
import { createPrincipalCache, PRINCIPAL_TTL_MS } from '../engine/access/principal-cache.js';
import { openHarness } from './control-api-harness.js';
import { frozenClock } from './helpers/clock.js';

describe('principal cache', () => {
  it('a key revoked, rotated past its grace, or expired stops working at once for this process', async () => {
    const h = await openHarness();
    try {
      const projectId = await h.createProject('cache');
      const ci = await h.createKey({ purpose: 'ci', projectId, role: 'member', expiresInDays: 1 });
      expect((await h.request('GET', '/v1/projects', { key: ci.apiKey })).statusCode).toBe(200);
      await h.ok('POST', `/v1/keys/${ci.keyId}/revoke`);
      expect((await h.request('GET', '/v1/projects', { key: ci.apiKey })).statusCode).toBe(401);

      const rotating = await h.createKey({ purpose: 'rotating', projectId, role: 'member' });
      expect((await h.request('GET', '/v1/projects', { key: rotating.apiKey })).statusCode).toBe(200);
      await h.ok('POST', `/v1/keys/${rotating.keyId}/rotate`, { body: { graceSeconds: 1 }, status: 201 });
      // In its grace second the old key still works (from the cache or not), then never again.
      expect((await h.request('GET', '/v1/projects', { key: rotating.apiKey })).statusCode).toBe(200);
      h.clock.advance(1_001);
      expect((await h.request('GET', '/v1/projects', { key: rotating.apiKey })).statusCode).toBe(401);

      const shortLived = await h.createKey({ purpose: 'short', projectId, role: 'member', expiresInDays: 1 });
      expect((await h.request('GET', '/v1/projects', { key: shortLived.apiKey })).statusCode).toBe(200);
      h.clock.advance(86_400_000);
      expect((await h.request('GET', '/v1/projects', { key: shortLived.apiKey })).statusCode).toBe(401);
    } finally {
      await h.dispose();
    }
  });

  it('a change made behind the app (another process on the same database) is seen within the TTL', async () => {
    const h = await openHarness();
    try {
      const ci = await h.createKey({ purpose: 'ci', role: 'member' });
      expect((await h.request('GET', '/v1/projects', { key: ci.apiKey })).statusCode).toBe(200);
      await h.local.repository.access.updateApiKey(ci.keyId, { revokedAt: new Date(h.clock.now()).toISOString() });
      // Still remembered: nothing told this process.
      expect((await h.request('GET', '/v1/projects', { key: ci.apiKey })).statusCode).toBe(200);
      h.clock.advance(PRINCIPAL_TTL_MS);
      expect((await h.request('GET', '/v1/projects', { key: ci.apiKey })).statusCode).toBe(401);
    } finally {
      await h.dispose();
    }
  });

  it('a demotion through the app is refused at once; one made behind the app (another replica) within the TTL', async () => {
    const h = await openHarness();
    try {
      const projectId = await h.createProject('grants');
      const ci = await h.createKey({ purpose: 'ci', role: 'member' });
      const write = async () =>
        (await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=a.txt`, { key: ci.apiKey, body: Buffer.from('x'), headers: { 'content-type': 'application/octet-stream' } })).statusCode;
      expect(await write()).toBe(201);
      await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${ci.identityId}`, { body: { role: 'viewer' } });
      expect(await write()).toBe(403);
      // Promoted again behind the app's back: the remembered role holds until the TTL has passed.
      await h.local.repository.access.setOrgRole({ orgId: h.orgId, identityId: ci.identityId, role: 'member' });
      expect(await write()).toBe(403);
      h.clock.advance(PRINCIPAL_TTL_MS);
      expect(await write()).toBe(201);
    } finally {
      await h.dispose();
    }
  });

  it('an authentication that started before an invalidation does not put its answer back', async () => {
    const cache = createPrincipalCache(frozenClock());
    const principal = { identity: { identityId: 'x' } } as unknown as Principal;
    let calls = 0;
    let release: () => void = () => {};
    const slow = () =>
      new Promise<{ principal: Principal; expiresAt: null }>((resolve) => {
        calls += 1;
        release = () => resolve({ principal, expiresAt: null });
      });
    const first = cache.get('credential', slow);
    cache.invalidate(); // e.g. the key was revoked while its check was reading the old row
    release();
    await first;
    const second = cache.get('credential', slow);
    release();
    await second;
    expect(calls).toBe(2);
    // Without an invalidation in between, the second lookup is a hit.
    await cache.get('credential', slow);
    expect(calls).toBe(2);
  });
});
