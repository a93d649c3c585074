// SSO connections end to end over the API: an organization brings its own OpenID provider (a second
// oidc-provider on loopback), proves its email domain by DNS TXT (an injected resolver) and the issuer
// by a test sign-in, activates it; its people then resolve to that issuer and authenticate as members
// of that organization only. Deactivation stops its tokens at once.

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintApiKey } from '../engine/access/api-keys.js';
import { auditChange } from '../engine/access/audit.js';
import { createWebSession } from '../engine/access/web-sessions.js';
import { type Harness, openHarness } from './control-api-harness.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const HOSTED_AUDIENCE = 'https://strata.test/api';
const LAB_AUDIENCE = 'api://lab-strata';

let hosted: TestProvider;
let lab: TestProvider;
let h: Harness;
const txt = new Map<string, string[][]>();

async function labToken(sub: string, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const key = lab.keys[0]!;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: lab.issuer, aud: LAB_AUDIENCE, sub, iat: now, exp: now + 3600, client_id: CLI_CLIENT_ID, name, ...extra })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .sign(key.privateKey);
}

/** A second organization with an owner key, made the way bootstrap makes the first. */
async function secondOrganization(): Promise<{ orgId: string; apiKey: string }> {
  const deps = h.access;
  const orgId = deps.ids.uuid();
  const ownerId = deps.ids.uuid();
  const createdAt = new Date(deps.clock.now()).toISOString();
  const { apiKey, record } = mintApiKey(deps, { orgId, identityId: ownerId, projectId: null, ownerId, purpose: 'owner of B', expiresAt: null, rotateBy: null });
  await deps.repository.access.applyAccessChanges([
    { kind: 'createOrganization', org: { orgId, name: 'Other lab', createdAt } },
    { kind: 'createIdentity', identity: { identityId: ownerId, kind: 'service', name: 'owner of B', email: null, createdAt } },
    { kind: 'setOrgRole', membership: { orgId, identityId: ownerId, role: 'owner' } },
    { kind: 'createApiKey', key: record },
    auditChange(deps, { orgId, actorId: ownerId, action: 'org.create', target: orgId, details: {} }),
  ]);
  return { orgId, apiKey };
}

beforeAll(async () => {
  hosted = await startTestProvider({ audience: HOSTED_AUDIENCE });
  lab = await startTestProvider({ audience: LAB_AUDIENCE });
  h = await openHarness({
    clockStart: Date.now(),
    signIn: { issuer: hosted.issuer, audience: HOSTED_AUDIENCE, clientId: CLI_CLIENT_ID, scopes: ['openid'], tokenType: 'at+jwt' },
    txtResolver: async (name) => {
      const records = txt.get(name);
      if (records === undefined) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return records;
    },
  });
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await hosted?.close();
  await lab?.close();
});

describe('SSO connections', () => {
  it('create → verify the domain → test a sign-in → activate; its people resolve there and join the organization', async () => {
    const base = `/v1/orgs/${h.orgId}/sso`;
    const created = await h.ok<{ connectionId: string; active: boolean; domains: Array<{ domain: string; verificationToken: string; verifiedAt: null }> }>('POST', base, {
      body: { issuer: lab.issuer, clientId: CLI_CLIENT_ID, audience: LAB_AUDIENCE, domains: ['Lab.Example'] },
      status: 201,
    });
    expect(created.active).toBe(false);
    expect(created.domains).toStrictEqual([{ domain: 'lab.example', verificationToken: expect.any(String), verifiedAt: null }]);
    const id = created.connectionId;
    const record = `strata-domain-verification=${created.domains[0]!.verificationToken}`;

    const early = await h.request('POST', `${base}/${id}/activate`, { body: {} });
    expect(early.statusCode).toBe(409);
    expect(early.json().error).toMatchObject({ code: 'SSO_NOT_READY', details: { verifiedDomains: 0, tested: false } });

    const missing = await h.request('POST', `${base}/${id}/domains/lab.example/verify`, { body: {} });
    expect(missing.statusCode).toBe(409);
    expect(missing.json().error).toMatchObject({ code: 'SSO_DOMAIN_NOT_VERIFIED', details: { domain: 'lab.example', record } });
    txt.set('lab.example', [['v=spf1 -all'], [record.slice(0, 20), record.slice(20)]]); // long TXT values arrive in chunks
    const verified = await h.ok<{ domains: Array<{ verifiedAt: string | null }> }>('POST', `${base}/${id}/domains/lab.example/verify`, { body: {} });
    expect(verified.domains[0]!.verifiedAt).not.toBeNull();

    // The test sign-in must be a person's token from that issuer, for that audience.
    for (const wrong of [await lab.clientCredentialsToken().catch(() => 'x.y.z'), await hostedToken(), await labToken('t', 'T', { aud: HOSTED_AUDIENCE })]) {
      const refused = await h.request('POST', `${base}/${id}/test`, { body: { accessToken: wrong } });
      expect(refused.statusCode).toBe(422);
      expect(refused.json().error.code).toBe('SSO_TEST_FAILED');
    }
    const tested = await h.ok<{ testedSubject: string }>('POST', `${base}/${id}/test`, { body: { accessToken: await labToken('it-admin', 'IT Admin') } });
    expect(tested.testedSubject).toBe('it-admin');

    // Not active yet: lab.example people still go to the hosted identity, and lab tokens are strangers.
    expect((await h.ok('POST', '/auth/resolve', { key: null as never, body: { email: 'ada@lab.example', clientKind: 'cli' } })) as unknown).toMatchObject({ mode: 'hosted' });
    expect((await h.request('GET', '/auth/me', { key: await labToken('ada', 'Ada') })).statusCode).toBe(401);

    await h.ok('POST', `${base}/${id}/activate`, { body: {} });
    expect(await h.ok('POST', '/auth/resolve', { key: null as never, body: { email: 'ada@LAB.example', clientKind: 'cli' } })).toStrictEqual({
      mode: 'sso',
      issuer: lab.issuer,
      clientId: CLI_CLIENT_ID,
      audience: LAB_AUDIENCE,
      scopes: ['openid', 'offline_access'],
      orgId: h.orgId,
    });
    expect(await h.ok('POST', '/auth/resolve', { key: null as never, body: { email: 'bob@elsewhere.example', clientKind: 'cli' } })).toMatchObject({ mode: 'hosted' });

    // Ada's first request creates her, as a member of this organization.
    const adaToken = await labToken('ada', 'Ada Lovelace');
    const ada = await h.ok<{ identity: { identityId: string; kind: string; name: string }; organizations: unknown[] }>('GET', '/auth/me', { key: adaToken });
    expect(ada.identity).toMatchObject({ kind: 'user', name: 'Ada Lovelace' });
    expect(ada.organizations).toStrictEqual([{ orgId: h.orgId, name: 'Lab', role: 'member' }]);

    // Her lab token speaks for this organization only, even once she is also in another one.
    const other = await secondOrganization();
    const otherProject = await h.createProject('b-project', other.apiKey);
    await h.ok('PUT', `/v1/orgs/${other.orgId}/members/${ada.identity.identityId}`, { key: other.apiKey, body: { role: 'member' } });
    expect((await h.request('GET', `/v1/projects/${otherProject}`, { key: adaToken })).statusCode).toBe(404);
    const again = await h.ok<{ organizations: Array<{ orgId: string }> }>('GET', '/auth/me', { key: adaToken });
    expect(again.organizations.map((o) => o.orgId)).toStrictEqual([h.orgId]);

    // The other organization cannot claim lab.example.
    const theirs = await h.ok<{ connectionId: string; domains: Array<{ verificationToken: string }> }>('POST', `/v1/orgs/${other.orgId}/sso`, {
      key: other.apiKey,
      body: { issuer: `${lab.issuer}/other`, clientId: 'x', audience: 'y', domains: ['lab.example'] },
      status: 201,
    });
    txt.set('lab.example', [[record], [`strata-domain-verification=${theirs.domains[0]!.verificationToken}`]]);
    const taken = await h.request('POST', `/v1/orgs/${other.orgId}/sso/${theirs.connectionId}/domains/lab.example/verify`, { key: other.apiKey, body: {} });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error.code).toBe('SSO_DOMAIN_TAKEN');

    // Diagnosis for the admin.
    const diagnosis = await h.ok<{ route: { mode: string } | null; reason: string }>('GET', `/v1/orgs/${h.orgId}/sso-diagnosis?email=ada%40lab.example`);
    expect(diagnosis.route?.mode).toBe('sso');
    expect(diagnosis.reason).toContain('is verified on active connection');
    const elsewhere = await h.ok<{ route: { mode: string } | null; reason: string }>('GET', `/v1/orgs/${h.orgId}/sso-diagnosis?email=x%40elsewhere.example`);
    expect(elsewhere).toMatchObject({ route: { mode: 'hosted' }, reason: expect.stringContaining('no connection of this organization lists elsewhere.example') });

    // Deactivated: her token and her browser session stop at once, and resolve goes back to the hosted identity.
    const browser = await createWebSession(h.access, { identity: { identityId: ada.identity.identityId, kind: 'user', name: 'Ada', email: null, createdAt: '' }, authKind: 'oidc', keyId: null, orgId: h.orgId, projectScope: null, roleCap: null });
    const cookie = { cookie: `strata_session=${browser.cookie}` };
    expect((await h.request('GET', '/auth/me', { key: null, headers: cookie })).statusCode).toBe(200);
    await h.ok('POST', `${base}/${id}/deactivate`, { body: {} });
    expect((await h.request('GET', '/auth/me', { key: adaToken })).statusCode).toBe(401);
    expect((await h.request('GET', '/auth/me', { key: null, headers: cookie })).statusCode).toBe(401);
    expect(await h.ok('POST', '/auth/resolve', { key: null as never, body: { email: 'ada@lab.example', clientKind: 'cli' } })).toMatchObject({ mode: 'hosted' });

    // Every step is in the audit log.
    const audit = await h.ok<{ items: Array<{ action: string }> }>('GET', `/v1/orgs/${h.orgId}/audit`);
    const actions = audit.items.map((a) => a.action);
    for (const action of ['sso.create', 'sso.domain-verify', 'sso.test', 'sso.activate', 'user.sso-join', 'sso.deactivate']) expect(actions).toContain(action);
  });

  it('only admins manage connections; bad input is refused with the field named', async () => {
    const member = await h.createKey({ purpose: 'member', role: 'member' });
    const body = { issuer: lab.issuer, clientId: 'c', audience: 'a', domains: ['x.example'] };
    expect((await h.request('POST', `/v1/orgs/${h.orgId}/sso`, { key: member.apiKey, body })).statusCode).toBe(403);
    expect((await h.request('GET', `/v1/orgs/${h.orgId}/sso`, { key: member.apiKey })).statusCode).toBe(403);
    for (const [field, patch] of [
      ['issuer', { issuer: 'http://idp.example.com' }],
      ['issuer', { issuer: hosted.issuer }],
      ['domains', { domains: ['not a domain'] }],
    ] as const) {
      const response = await h.request('POST', `/v1/orgs/${h.orgId}/sso`, { body: { ...body, ...patch } });
      expect(response.statusCode, JSON.stringify(patch)).toBe(422);
      expect(response.json().error.details.field).toBe(field);
    }
  });
});

async function hostedToken(): Promise<string> {
  const key = hosted.keys[0]!;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: hosted.issuer, aud: HOSTED_AUDIENCE, sub: 'h', iat: now, exp: now + 3600, client_id: CLI_CLIENT_ID })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .sign(key.privateKey);
}
