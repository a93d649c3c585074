// People own keys: a signed-in person makes API keys for CI that act as them (history names the
// person), narrowed by the key's role and project, living hours if asked, and gone when they leave.

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const AUDIENCE = 'https://strata.test/api';
let provider: TestProvider;
let h: Harness;

async function personToken(sub: string, name: string): Promise<string> {
  const key = provider.keys[0]!;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: provider.issuer, aud: AUDIENCE, sub, iat: now, exp: now + 3600, client_id: CLI_CLIENT_ID, name })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .sign(key.privateKey);
}

beforeAll(async () => {
  provider = await startTestProvider({ audience: AUDIENCE });
  h = await openHarness({
    clockStart: Date.now(),
    signIn: { issuer: provider.issuer, audience: AUDIENCE, clientId: CLI_CLIENT_ID, scopes: ['openid'], tokenType: 'at+jwt' },
  });
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await provider?.close();
});

describe("a person's own API keys", () => {
  it('act as the person, narrowed by role and project, expire in hours and die with the membership', async () => {
    const token = await personToken('grace', 'Grace Hopper');
    const grace = await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: token });
    const graceId = grace.identity.identityId;
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${graceId}`, { body: { role: 'member' } });
    const projectId = await h.createProject('compiler', token);
    const other = await h.createProject('elsewhere');

    // A CI key for one project, for two hours; it acts as Grace.
    const issued = await h.ok<{ apiKey: string; key: { keyId: string; identityId: string; roleCap: string; role: string; expiresAt: string } }>('POST', '/v1/keys', {
      key: token,
      body: { purpose: 'CI of compiler', projectId, expiresInHours: 2 },
      status: 201,
    });
    expect(issued.key).toMatchObject({ identityId: graceId, roleCap: 'member', role: 'member', expiresAt: new Date(h.clock.now() + 7_200_000).toISOString() });
    const ci = issued.apiKey;
    const write = await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=build.log`, { key: ci, payload: 'ok', headers: { 'content-type': 'application/octet-stream' } });
    expect(write.statusCode, write.body).toBe(201);
    const history = await h.ok<{ items: Array<{ actor: unknown }> }>('GET', `/v1/projects/${projectId}/history?path=build.log`, { key: ci });
    expect(history.items[0]!.actor).toStrictEqual({ id: graceId, kind: 'user', name: 'Grace Hopper' });
    const me = await h.ok<{ identity: { identityId: string }; authKind: string; keyId: string; projectScope: string }>('GET', '/auth/me', { key: ci });
    expect(me).toMatchObject({ identity: { identityId: graceId }, authKind: 'api-key', keyId: issued.key.keyId, projectScope: projectId });
    // Scoped to its project: the other one does not exist for it.
    expect((await h.request('GET', `/v1/projects/${other}`, { key: ci })).statusCode).toBe(404);

    // A read-only key of hers can read, not write; and no key of hers can be above her.
    const viewer = await h.ok<{ apiKey: string }>('POST', '/v1/keys', { key: token, body: { purpose: 'dashboard', role: 'viewer' }, status: 201 });
    expect((await h.request('GET', `/v1/projects/${projectId}/fs/read?path=build.log`, { key: viewer.apiKey })).statusCode).toBe(200);
    const denied = await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=x`, { key: viewer.apiKey, payload: 'x', headers: { 'content-type': 'application/octet-stream' } });
    expect(denied.statusCode).toBe(403);
    expect((await h.request('POST', '/v1/keys', { key: token, body: { purpose: 'too much', role: 'admin' } })).statusCode).toBe(403);
    // Nor can the viewer key mint a member key: its own cap is its creator's role for that purpose.
    expect((await h.request('POST', '/v1/keys', { key: viewer.apiKey, body: { purpose: 'escalate', role: 'member' } })).statusCode).toBe(403);

    // She sees and rotates her keys; the new one still acts as her.
    const mine = await h.ok<{ items: Array<{ keyId: string; identityId: string }> }>('GET', '/v1/keys', { key: token });
    expect(mine.items.map((k) => k.keyId)).toContain(issued.key.keyId);
    const rotated = await h.ok<{ apiKey: string; key: { identityId: string; roleCap: string } }>('POST', `/v1/keys/${issued.key.keyId}/rotate`, {
      key: token,
      body: { graceSeconds: 0 },
      status: 201,
    });
    expect(rotated.key).toMatchObject({ identityId: graceId, roleCap: 'member' });
    expect((await h.request('GET', '/v1/projects', { key: rotated.apiKey })).statusCode).toBe(200);
    // She sees only her own keys (not the owner's), and revokes one of hers.
    const others = await h.ok<{ items: Array<{ keyId: string }> }>('GET', '/v1/keys');
    expect(mine.items.length).toBeLessThan(others.items.length);
    const spare = await h.ok<{ apiKey: string; key: { keyId: string } }>('POST', '/v1/keys', { key: token, body: { purpose: 'spare' }, status: 201 });
    expect(await h.ok('POST', `/v1/keys/${spare.key.keyId}/revoke`, { key: token, body: {} })).toMatchObject({ status: 'revoked' });
    expect((await h.request('GET', '/v1/projects', { key: spare.apiKey })).statusCode).toBe(401);

    // Two hours later the rotated key (same lifetime, counted from its rotation) is expired.
    h.clock.advance(7_200_001);
    expect((await h.request('GET', '/v1/projects', { key: rotated.apiKey })).statusCode).toBe(401);
    h.clock.set(Date.now());

    // She leaves the organization: her keys stop at once.
    expect((await h.request('GET', '/v1/projects', { key: viewer.apiKey })).statusCode).toBe(200);
    await h.ok('DELETE', `/v1/orgs/${h.orgId}/members/${graceId}`, { status: 204 });
    expect((await h.request('GET', '/v1/projects', { key: viewer.apiKey })).statusCode).toBe(401);
  });

  it('removing a person from the organization revokes the keys they made, service keys included', async () => {
    const token = await personToken('linus', 'Linus');
    const linus = (await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: token })).identity.identityId;
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${linus}`, { body: { role: 'member' } });
    const projectId = await h.createProject('kernel');
    const own = await h.ok<{ apiKey: string; key: { keyId: string } }>('POST', '/v1/keys', { key: token, body: { purpose: 'laptop' }, status: 201 });
    const bot = await h.ok<{ apiKey: string; key: { keyId: string } }>('POST', '/v1/keys', { key: token, body: { purpose: 'his bot', actAs: 'service' }, status: 201 });
    const read = (key: string) => h.request('GET', `/v1/projects/${projectId}/history`, { key });
    expect((await read(own.apiKey)).statusCode).toBe(200);
    expect((await read(bot.apiKey)).statusCode).toBe(200);

    await h.ok('DELETE', `/v1/orgs/${h.orgId}/members/${linus}`, { status: 204 });
    // He keeps the secrets he made: none of them may keep his access.
    expect((await read(bot.apiKey)).statusCode).toBe(401);
    expect((await read(own.apiKey)).statusCode).toBe(401);
    const keys = await h.ok<{ items: Array<{ keyId: string; status: string }> }>('GET', `/v1/keys?orgId=${h.orgId}`);
    expect(keys.items.filter((k) => k.keyId === own.key.keyId || k.keyId === bot.key.keyId).map((k) => k.status)).toEqual(['revoked', 'revoked']);
    // Added again later, he starts without them.
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${linus}`, { body: { role: 'member' } });
    expect((await read(own.apiKey)).statusCode).toBe(401);
    expect((await read(bot.apiKey)).statusCode).toBe(401);
    expect((await read(token)).statusCode).toBe(200);
  });

  it('a service caller still gets service keys by default, and a person may ask for one', async () => {
    const service = await h.ok<{ key: { identityId: string; roleCap: string | null } }>('POST', '/v1/keys', { body: { purpose: 'nightly' }, status: 201 });
    expect(service.key.roleCap).toBeNull();
    expect(service.key.identityId).not.toBe(h.ownerId);
    const token = await personToken('ada', 'Ada');
    const ada = await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: token });
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${ada.identity.identityId}`, { body: { role: 'member' } });
    const asService = await h.ok<{ key: { identityId: string; roleCap: string | null } }>('POST', '/v1/keys', { key: token, body: { purpose: 'bot', actAs: 'service' }, status: 201 });
    expect(asService.key.roleCap).toBeNull();
    expect(asService.key.identityId).not.toBe(ada.identity.identityId);
    const both = await h.request('POST', '/v1/keys', { key: token, body: { purpose: 'x', expiresInDays: 1, expiresInHours: 1 } });
    expect(both.statusCode).toBe(422);
  });
});
