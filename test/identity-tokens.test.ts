// OIDC access tokens against a real provider (oidc-provider on loopback): people and CI clients
// authenticate with the issuer's JWT access tokens, map to identities just in time, and every forged
// or misused token is the same 401.

import { createHmac, createPublicKey } from 'node:crypto';
import { base64url, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../engine/access/token-verifier.js';
import { openHarness, type Harness } from './control-api-harness.js';
import { browseToRedirect, CLI_CLIENT_ID, newSigningKey, startTestProvider, type SigningKey, type TestProvider } from './helpers/oidc-provider.js';

const AUDIENCE = 'https://strata.test/api';

let provider: TestProvider;
let stranger: TestProvider;
let h: Harness;
/** the provider's first key: published throughout, also after the rotation test */
let firstKey: SigningKey;

async function codeFlowTokens(account: { sub: string; email?: string; name?: string }): Promise<{ accessToken: string; idToken: string }> {
  provider.signInAs(account);
  const config = await oidc.discovery(new URL(provider.issuer), CLI_CLIENT_ID, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: 'http://127.0.0.1:49152/callback',
    scope: 'openid email profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource: AUDIENCE,
  });
  const callback = await browseToRedirect(url.href, provider.issuer);
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, { resource: AUDIENCE });
  return { accessToken: tokens.access_token, idToken: tokens.id_token! };
}

/** A token signed with the provider's real key, with the claims and header the test chooses. */
async function signed(claims: Record<string, unknown>, header: Record<string, unknown> = {}, key = firstKey): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: provider.issuer, aud: AUDIENCE, sub: 'mallory', iat: now, exp: now + 300, client_id: CLI_CLIENT_ID, ...claims };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name as keyof typeof payload];
  return new SignJWT(payload as Record<string, unknown>).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid, ...header }).sign(key.privateKey);
}

function unsecured(claims: Record<string, unknown>): string {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'at+jwt' }));
  const payload = base64url.encode(JSON.stringify({ iss: provider.issuer, aud: AUDIENCE, sub: 'mallory', iat: now, exp: now + 300, ...claims }));
  return `${header}.${payload}.`;
}

/** HS256 "signed" with the provider's public key as the HMAC secret (the classic key-confusion attack). */
function hmacWithPublicKey(): string {
  const now = Math.floor(Date.now() / 1000);
  const pem = createPublicKey({ key: firstKey.publicJwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
  const header = base64url.encode(JSON.stringify({ alg: 'HS256', typ: 'at+jwt', kid: firstKey.kid }));
  const payload = base64url.encode(JSON.stringify({ iss: provider.issuer, aud: AUDIENCE, sub: 'mallory', iat: now, exp: now + 300 }));
  const signature = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}

function withoutRequestId(body: string): unknown {
  const parsed = JSON.parse(body) as { error: Record<string, unknown> };
  const { requestId: _requestId, ...rest } = parsed.error;
  return rest;
}

beforeAll(async () => {
  provider = await startTestProvider({ audience: AUDIENCE });
  stranger = await startTestProvider({ audience: AUDIENCE });
  firstKey = provider.keys[0]!;
  h = await openHarness({
    clockStart: Date.now(),
    signIn: { issuer: provider.issuer, audience: AUDIENCE, clientId: CLI_CLIENT_ID, scopes: ['openid', 'offline_access'], tokenType: 'at+jwt' },
  });
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await provider?.close();
  await stranger?.close();
});

describe('OIDC access tokens', () => {
  it('a person signs in with authorization code + PKCE; the access token maps to one user, created on first use', async () => {
    const { accessToken } = await codeFlowTokens({ sub: 'alice', email: 'alice@lab.example', name: 'Alice Example' });
    const me = await h.ok<{ identity: { identityId: string; kind: string; name: string; email: string }; authKind: string; organizations: unknown[] }>(
      'GET',
      '/auth/me',
      { key: accessToken },
    );
    expect(me).toMatchObject({ identity: { kind: 'user', name: 'Alice Example', email: 'alice@lab.example' }, authKind: 'oidc', organizations: [] });
    // Same person, new token: same identity.
    const again = await codeFlowTokens({ sub: 'alice', email: 'alice@lab.example', name: 'Alice Example' });
    const me2 = await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: again.accessToken });
    expect(me2.identity.identityId).toBe(me.identity.identityId);

    // An owner adds her to the organization; her writes then name her.
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${me.identity.identityId}`, { body: { role: 'member' } });
    const projectId = await h.createProject('alice-project', accessToken);
    const put = await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=notes.md`, {
      key: accessToken,
      payload: 'hello',
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.statusCode, put.body).toBeLessThan(300);
    const history = await h.ok<{ items: Array<{ actor: { id: string; kind: string; name: string } }> }>('GET', `/v1/projects/${projectId}/history?path=notes.md`, {
      key: accessToken,
    });
    expect(history.items[0]!.actor).toStrictEqual({ id: me.identity.identityId, kind: 'user', name: 'Alice Example' });
    const meNow = await h.ok<{ organizations: Array<{ orgId: string; role: string }> }>('GET', '/auth/me', { key: accessToken });
    expect(meNow.organizations).toStrictEqual([{ orgId: h.orgId, name: 'Lab', role: 'member' }]);
  });

  it('a client-credentials token maps to a service identity with no access until granted', async () => {
    const token = await provider.clientCredentialsToken();
    const me = await h.ok<{ identity: { kind: string; name: string }; organizations: unknown[] }>('GET', '/auth/me', { key: token });
    expect(me.identity).toMatchObject({ kind: 'service', name: 'client ci-runner' });
    expect(me.organizations).toStrictEqual([]);
    const projects = await h.ok<{ items: unknown[] }>('GET', '/v1/projects', { key: token });
    expect(projects.items).toStrictEqual([]);
  });

  it("concurrent first requests of one person create one identity", async () => {
    const token = await signed({ sub: 'bob-concurrent', email: 'bob@lab.example', email_verified: true, name: 'Bob' });
    const answers = await Promise.all(Array.from({ length: 12 }, () => h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: token })));
    expect(new Set(answers.map((a) => a.identity.identityId)).size).toBe(1);
  });

  it('every forged or misused token is the same 401', async () => {
    const { idToken } = await codeFlowTokens({ sub: 'carol', email: 'carol@lab.example', name: 'Carol' });
    const now = Math.floor(Date.now() / 1000);
    const unknownKey = await newSigningKey('unknown-kid');
    const cases: Record<string, string> = {
      'alg none': unsecured({}),
      'HS256 signed with the public key': hmacWithPublicKey(),
      expired: await signed({ iat: now - 3600, exp: now - 120 }),
      'nbf in the future': await signed({ nbf: now + 600 }),
      'wrong iss': await signed({ iss: `${provider.issuer}/other` }),
      'wrong aud': await signed({ aud: 'https://elsewhere.example/api' }),
      'missing exp': await signed({ exp: undefined }),
      'missing sub': await signed({ sub: undefined }),
      'missing iat': await signed({ iat: undefined }),
      'unknown kid': await signed({}, { kid: 'unknown-kid' }, unknownKey),
      'an ID token': idToken,
      'an ID token re-typed as at+jwt': await signed({ nonce: 'n-0S6_WzA2Mj', at_hash: 'x' }),
      'untyped token (typ JWT)': await signed({}, { typ: 'JWT' }),
      "another issuer's token": await stranger.clientCredentialsToken(),
      'not a JWT': 'eyJhbGciOiJFUzI1NiJ9.not-base64!.x',
      'garbage bearer': 'x'.repeat(40),
    };
    const reference = await h.request('GET', '/auth/me', { key: 'rk.test.AAAAAAAAAAAAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB' });
    expect(reference.statusCode).toBe(401);
    for (const [name, token] of Object.entries(cases)) {
      const response = await h.request('GET', '/auth/me', { key: token });
      expect(response.statusCode, name).toBe(401);
      expect(response.headers['www-authenticate'], name).toBe('Bearer');
      expect(withoutRequestId(response.body), name).toStrictEqual(withoutRequestId(reference.body));
    }
    // Sanity: the same signing path with nothing wrong is accepted.
    expect((await h.request('GET', '/auth/me', { key: await signed({ sub: 'control' }) })).statusCode).toBe(200);
  });

  it('an unknown kid fetches the JWKS once, then waits out the cooldown', async () => {
    const fetchesBefore = provider.jwksFetches();
    const unknownKey = await newSigningKey('never-published');
    for (let i = 0; i < 20; i += 1) {
      expect((await h.request('GET', '/auth/me', { key: await signed({ sub: `burst-${i}` }, { kid: unknownKey.kid }, unknownKey) })).statusCode).toBe(401);
    }
    // The app's verifier fetched its keys moments ago: the 30 s cooldown holds every refetch back.
    expect(provider.jwksFetches() - fetchesBefore).toBe(0);
  });

  it('key rotation: a token signed with a newly published key is accepted after one refetch', async () => {
    const verifier = createTokenVerifier({
      clock: { now: () => Date.now() },
      jwksCooldownMs: 0,
      trustedIssuer: async (iss) => (iss === provider.issuer ? { issuer: iss, audience: AUDIENCE, tokenType: 'at+jwt', orgId: null } : null),
    });
    const before = await provider.clientCredentialsToken();
    await expect(verifier.verify(before)).resolves.toMatchObject({ subject: 'ci-runner', service: true });
    const fetchesAfterFirst = provider.jwksFetches();
    const rotated = await provider.rotate();
    const after = await provider.clientCredentialsToken();
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe(rotated.kid);
    await expect(verifier.verify(after)).resolves.toMatchObject({ subject: 'ci-runner' });
    expect(provider.jwksFetches() - fetchesAfterFirst).toBe(1);
    // The old key is still published: its tokens keep verifying without another fetch.
    await expect(verifier.verify(before)).resolves.toMatchObject({ subject: 'ci-runner' });
    expect(provider.jwksFetches() - fetchesAfterFirst).toBe(1);
  });
});

describe('/auth/resolve and /auth/me', () => {
  it('resolve sends an email to the hosted identity (no credential needed)', async () => {
    const response = await h.request('POST', '/auth/resolve', { key: null, body: { email: 'someone@anywhere.example', clientKind: 'cli' } });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toStrictEqual({ mode: 'hosted', issuer: provider.issuer, clientId: CLI_CLIENT_ID, audience: AUDIENCE, scopes: ['openid', 'offline_access'], orgId: null });
    const bad = await h.request('POST', '/auth/resolve', { key: null, body: { email: 'not-an-email', clientKind: 'cli' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('INVALID_BODY');
  });

  it('resolve on a server without sign-in says so', async () => {
    const plain = await openHarness();
    try {
      const response = await plain.request('POST', '/auth/resolve', { key: null, body: { email: 'a@b.example', clientKind: 'cli' } });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('SIGN_IN_NOT_CONFIGURED');
      // And a JWT there is just a bad credential.
      expect((await plain.request('GET', '/auth/me', { key: await signed({}) })).statusCode).toBe(401);
    } finally {
      await plain.dispose();
    }
  });

  it('preferences merge, persist per identity and are bounded', async () => {
    const token = await signed({ sub: 'dana', name: 'Dana' });
    expect(await h.ok('PATCH', '/auth/me/preferences', { key: token, body: { theme: 'dark', pageSize: 50 } })).toStrictEqual({ theme: 'dark', pageSize: 50 });
    expect(await h.ok('PATCH', '/auth/me/preferences', { key: token, body: { pageSize: null, diff: 'split' } })).toStrictEqual({ theme: 'dark', diff: 'split' });
    const me = await h.ok<{ preferences: unknown }>('GET', '/auth/me', { key: await signed({ sub: 'dana', name: 'Dana' }) });
    expect(me.preferences).toStrictEqual({ theme: 'dark', diff: 'split' });
    const tooBig = await h.request('PATCH', '/auth/me/preferences', { key: token, body: { blob: 'x'.repeat(20_000) } });
    expect(tooBig.statusCode).toBe(422);
    expect(tooBig.json().error.code).toBe('PREFERENCES_TOO_LARGE');
    // The owner key's preferences are its own.
    expect((await h.ok<{ preferences: unknown }>('GET', '/auth/me')).preferences).toStrictEqual({});
  });

  it("me lists the caller's project memberships", async () => {
    const token = await signed({ sub: 'erin', name: 'Erin' });
    const erin = await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: token });
    await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${erin.identity.identityId}`, { body: { role: 'member' } });
    const projectId = await h.createProject('erin-readonly');
    await h.ok('PUT', `/v1/projects/${projectId}/members/${erin.identity.identityId}`, { body: { access: 'read' } });
    const me = await h.ok<{ memberships: unknown[] }>('GET', '/auth/me', { key: token });
    expect(me.memberships).toStrictEqual([{ projectId, orgId: h.orgId, name: 'erin-readonly', access: 'read' }]);
  });
});
