// Audit records name the request that made the change and its client address (through trusted
// proxies only); a person's first request with a new access token is audited as a sign-in, once.

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const AUDIENCE = 'https://strata.test/api';
let provider: TestProvider;
let h: Harness;

interface Audit {
  action: string;
  actorId: string;
  target: string;
  requestId: string | null;
  clientIp: string | null;
}

async function auditLog(): Promise<Audit[]> {
  return (await h.ok<{ items: Audit[] }>('GET', `/v1/orgs/${h.orgId}/audit?limit=500`)).items;
}

beforeAll(async () => {
  provider = await startTestProvider({ audience: AUDIENCE });
  h = await openHarness({
    clockStart: Date.now(),
    trustProxy: ['127.0.0.1/32'],
    signIn: { issuer: provider.issuer, audience: AUDIENCE, clientId: CLI_CLIENT_ID, scopes: ['openid'], tokenType: 'at+jwt' },
  });
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await provider?.close();
});

describe('audit origin', () => {
  it('a key change names its request id and the client behind the trusted proxy', async () => {
    const response = await h.request('POST', '/v1/keys', { body: { purpose: 'audited' }, headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(response.statusCode).toBe(201);
    const record = (await auditLog()).find((a) => a.action === 'key.create' && a.target === response.json().key.keyId);
    expect(record).toMatchObject({ requestId: response.headers['x-request-id'], clientIp: '203.0.113.9' });
  });

  it("a person's first request with a token is a sign-in, audited once", async () => {
    const key = provider.keys[0]!;
    const now = Math.floor(Date.now() / 1000);
    const sign = (jti: string) =>
      new SignJWT({ iss: provider.issuer, aud: AUDIENCE, sub: 'lin', iat: now, exp: now + 600, client_id: CLI_CLIENT_ID, jti, name: 'Lin' })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
        .sign(key.privateKey);
    const first = await sign('jti-1');
    const lin = await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: first });
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${lin.identity.identityId}`, { body: { role: 'member' } });
    const second = await sign('jti-2');
    for (let i = 0; i < 3; i += 1) await h.ok('GET', '/v1/projects', { key: second });
    const logins = (await auditLog()).filter((a) => a.action === 'auth.login' && a.actorId === lin.identity.identityId);
    // The first token came before she was a member (no organization to audit it in); the second, once.
    expect(logins).toHaveLength(1);
    expect(logins[0]).toMatchObject({ target: lin.identity.identityId, clientIp: '127.0.0.1', requestId: expect.any(String) });
  });
});
