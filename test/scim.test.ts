// SCIM 2.0 with the request sequences Okta and Microsoft Entra ID send (their documentation's
// provisioning flows: look up by userName, create, update, deactivate; groups with members added and
// removed their two different ways), over the API with the organization's SCIM token. Provisioned
// users get roles from their groups, sign in through the organization's SSO issuer as themselves, and
// lose sessions and keys the moment they are deactivated.

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebSession } from '../engine/access/web-sessions.js';
import { type Harness, openHarness } from './control-api-harness.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const LAB_AUDIENCE = 'api://lab-strata';

let lab: TestProvider;
let h: Harness;
let token: string;
let earlyId: string;

type Json = Record<string, unknown> & { id: string };

async function scim(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown, bearer = token) {
  const response = await h.app.inject({
    method,
    url: `/scim/v2${url}`,
    headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: response.statusCode, type: response.headers['content-type'], body: response.body === '' ? null : (JSON.parse(response.body) as Json) };
}

async function labToken(sub: string, email: string, verified = true): Promise<string> {
  const key = lab.keys[0]!;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: lab.issuer, aud: LAB_AUDIENCE, sub, iat: now, exp: now + 3600, client_id: CLI_CLIENT_ID, email, email_verified: verified })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .sign(key.privateKey);
}

async function roleOf(identityId: string): Promise<string | null> {
  const members = await h.ok<{ items: Array<{ identityId: string; role: string }> }>('GET', `/v1/orgs/${h.orgId}/members`);
  return members.items.find((m) => m.identityId === identityId)?.role ?? null;
}

beforeAll(async () => {
  lab = await startTestProvider({ audience: LAB_AUDIENCE });
  const txt = new Map<string, string[][]>();
  h = await openHarness({ clockStart: Date.now(), txtResolver: async (name) => txt.get(name) ?? [] });
  // The lab's own sign-in, set up as in identity-sso.test.ts.
  const created = await h.ok<{ connectionId: string; domains: Array<{ verificationToken: string }> }>('POST', `/v1/orgs/${h.orgId}/sso`, {
    body: { issuer: lab.issuer, clientId: CLI_CLIENT_ID, audience: LAB_AUDIENCE, domains: ['lab.example'] },
    status: 201,
  });
  txt.set('lab.example', [[`strata-domain-verification=${created.domains[0]!.verificationToken}`]]);
  await h.ok('POST', `/v1/orgs/${h.orgId}/sso/${created.connectionId}/domains/lab.example/verify`, { body: {} });
  await h.ok('POST', `/v1/orgs/${h.orgId}/sso/${created.connectionId}/test`, { body: { accessToken: await labToken('it', 'it@lab.example') } });
  await h.ok('POST', `/v1/orgs/${h.orgId}/sso/${created.connectionId}/activate`, { body: {} });

  // Someone signs in through the lab's provider before the directory is connected: a member, made then.
  earlyId = (await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: await labToken('early-sub', 'early@lab.example') })).identity.identityId;

  token = (await h.ok<{ token: string }>('POST', `/v1/orgs/${h.orgId}/scim/token`, { body: {}, status: 201 })).token;
  await h.ok('PUT', `/v1/orgs/${h.orgId}/scim/roles`, { body: { defaultRole: 'member', groupRoles: { 'Strata Admins': 'admin', Readers: 'viewer' } } });
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await lab?.close();
});

describe('SCIM', () => {
  it('discovery documents', async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.type).toContain('application/scim+json');
    expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true }, bulk: { supported: false } });
    expect((await scim('GET', '/ResourceTypes')).body).toMatchObject({ totalResults: 2 });
    const schemas = (await scim('GET', '/Schemas')).body as unknown as { Resources: Array<{ id: string }> };
    expect(schemas.Resources.map((s) => s.id)).toStrictEqual([USER, GROUP]);
  });

  it('the Okta sequence: provision, sign in, map groups to roles, deactivate (sessions and keys end), reactivate', async () => {
    // Okta's connection test, then its lookup before every create.
    expect((await scim('GET', '/Users?startIndex=1&count=2')).body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], startIndex: 1 });
    expect((await scim('GET', '/Groups?startIndex=1&count=100')).status).toBe(200);
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "jane@lab.example"')}&startIndex=1&count=100`)).body).toMatchObject({ totalResults: 0 });
    const created = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'jane@lab.example',
      name: { givenName: 'Jane', familyName: 'Doe' },
      emails: [{ primary: true, value: 'jane@lab.example', type: 'work' }],
      displayName: 'Jane Doe',
      locale: 'en-US',
      externalId: '00u1abcdEFG',
      groups: [],
      password: 'never-stored',
      active: true,
    });
    expect(created.status).toBe(201);
    const jane = created.body!;
    expect(jane).toMatchObject({ userName: 'jane@lab.example', active: true, externalId: '00u1abcdEFG', displayName: 'Jane Doe', meta: { resourceType: 'User', version: 'W/"1"' } });
    expect(jane).not.toHaveProperty('password');
    expect(await roleOf(jane.id)).toBe('member');
    // userName matches case-insensitively.
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "JANE@LAB.EXAMPLE"')}`)).body).toMatchObject({ totalResults: 1 });
    expect((await scim('POST', '/Users', { schemas: [USER], userName: 'Jane@lab.example' })).body).toMatchObject({ status: '409', scimType: 'uniqueness' });

    // She signs in through the lab's provider: the token finds her provisioned identity.
    const session = await labToken('okta-00u1abcdEFG', 'jane@lab.example');
    const me = await h.ok<{ identity: { identityId: string; name: string } }>('GET', '/auth/me', { key: session });
    expect(me.identity).toMatchObject({ identityId: jane.id, name: 'Jane Doe' });
    const projectId = await h.createProject('jane-data', session);
    const ci = await h.ok<{ apiKey: string }>('POST', '/v1/keys', { key: session, body: { purpose: 'jane CI', projectId }, status: 201 });
    expect((await h.request('GET', `/v1/projects/${projectId}`, { key: ci.apiKey })).statusCode).toBe(200);

    // Okta updates a profile with PUT.
    const replaced = await scim('PUT', `/Users/${jane.id}`, { ...jane, name: { givenName: 'Jane', familyName: 'Smith' }, displayName: 'Jane Smith' });
    expect(replaced.body).toMatchObject({ displayName: 'Jane Smith', meta: { version: 'W/"2"' } });
    expect((await h.ok<{ identity: { name: string } }>('GET', '/auth/me', { key: session })).identity.name).toBe('Jane Smith');

    // Groups: Okta pushes a group, then adds members with a path and removes them with a filter.
    const admins = (await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Strata Admins', members: [] })).body!;
    await scim('PATCH', `/Groups/${admins.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: jane.id, display: 'jane@lab.example' }] }] });
    expect(await roleOf(jane.id)).toBe('admin');
    expect((await scim('GET', `/Users/${jane.id}`)).body).toMatchObject({ groups: [{ value: admins.id, display: 'Strata Admins' }] });
    // A rename without a path (Okta's "push group" update): the new name maps to viewer.
    await scim('PATCH', `/Groups/${admins.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { id: admins.id, displayName: 'Readers' } }] });
    expect(await roleOf(jane.id)).toBe('viewer');
    await scim('PATCH', `/Groups/${admins.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${jane.id}"]` }] });
    expect(await roleOf(jane.id)).toBe('member');

    // She also has a browser session.
    const browser = await createWebSession(h.access, { identity: { identityId: jane.id, kind: 'user', name: 'Jane', email: null, createdAt: '' }, authKind: 'oidc', keyId: null, orgId: h.orgId, projectScope: null, roleCap: null });
    const cookie = { cookie: `strata_session=${browser.cookie}` };
    expect((await h.request('GET', '/auth/me', { key: null, headers: cookie })).statusCode).toBe(200);

    // Deactivation: Okta's PATCH without a path. Her sign-in, her browser session and her key stop at once.
    const deactivated = await scim('PATCH', `/Users/${jane.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(deactivated.body).toMatchObject({ active: false });
    expect(await roleOf(jane.id)).toBeNull();
    expect((await h.request('GET', '/auth/me', { key: session })).statusCode).toBe(401);
    expect((await h.request('GET', '/auth/me', { key: null, headers: cookie })).statusCode).toBe(401);
    expect((await h.request('GET', `/v1/projects/${projectId}`, { key: ci.apiKey })).statusCode).toBe(401);
    const keys = await h.ok<{ items: Array<{ purpose: string; status: string }> }>('GET', '/v1/keys');
    expect(keys.items.find((k) => k.purpose === 'jane CI')?.status).toBe('revoked');
    const audit = await h.ok<{ items: Array<{ action: string; actorId: string }> }>('GET', `/v1/orgs/${h.orgId}/audit`);
    expect(audit.items.find((a) => a.action === 'scim.user.deactivate')?.actorId).toMatch(/^scim:/);

    // Reactivated: a member again; the history she wrote still names her.
    await scim('PATCH', `/Users/${jane.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] });
    expect(await roleOf(jane.id)).toBe('member');
    expect((await h.request('GET', '/auth/me', { key: session })).statusCode).toBe(200);
  });

  it('the Entra sequence: extension attributes, Replace with paths, "False" as a string, members added and removed by value', async () => {
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "bob@lab.example"')}`)).body).toMatchObject({ totalResults: 0 });
    const bob = (
      await scim('POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        externalId: 'bob-entra-id',
        userName: 'bob@lab.example',
        active: true,
        emails: [{ primary: true, type: 'work', value: 'bob@lab.example' }],
        meta: { resourceType: 'User' },
        name: { formatted: 'Bob Builder', familyName: 'Builder', givenName: 'Bob' },
        roles: [],
        [ENTERPRISE]: { department: 'Physics' },
      })
    ).body!;
    expect(bob).toMatchObject({ schemas: [USER, ENTERPRISE], [ENTERPRISE]: { department: 'Physics' } });
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('externalId eq "bob-entra-id"')}`)).body).toMatchObject({ totalResults: 1 });

    const patched = await scim('PATCH', `/Users/${bob.id}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'bob.b@lab.example' },
        { op: 'Replace', path: 'name.familyName', value: 'Bauer' },
        { op: 'Add', path: `${ENTERPRISE}:department`, value: 'Chemistry' },
      ],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ emails: [{ type: 'work', value: 'bob.b@lab.example', primary: true }], name: { familyName: 'Bauer' }, [ENTERPRISE]: { department: 'Chemistry' } });
    const byEmail = await scim('GET', `/Users?filter=${encodeURIComponent('emails[type eq "work"].value eq "bob.b@lab.example" and active eq true')}`);
    expect(byEmail.body).toMatchObject({ totalResults: 1 });

    const group = (await scim('POST', '/Groups', { externalId: 'g-1', displayName: 'Physics Admins', meta: { resourceType: 'Group' }, members: [] })).body!;
    await h.ok('PUT', `/v1/orgs/${h.orgId}/scim/roles`, { body: { defaultRole: 'member', groupRoles: { 'Strata Admins': 'admin', Readers: 'viewer', 'Physics Admins': 'admin' } } });
    const listed = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "Physics Admins"')}&excludedAttributes=members`);
    expect(listed.body).toMatchObject({ totalResults: 1 });
    expect((listed.body as unknown as { Resources: Json[] }).Resources[0]).not.toHaveProperty('members');
    await scim('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: bob.id }] }] });
    expect(await roleOf(bob.id)).toBe('admin');
    await scim('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: bob.id }] }] });
    expect(await roleOf(bob.id)).toBe('member');
    await scim('PATCH', `/Groups/${group.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'displayName', value: 'Physics' }] });
    expect((await scim('GET', `/Groups/${group.id}`)).body).toMatchObject({ displayName: 'Physics', members: [] });

    // Entra's disable: a string "False".
    expect((await scim('PATCH', `/Users/${bob.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] })).body).toMatchObject({ active: false });
    expect(await roleOf(bob.id)).toBeNull();
    // A disabled user still answers a filter, with active false (Entra's validator checks it).
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "bob@lab.example"')}`)).body).toMatchObject({ Resources: [{ active: false }] });

    expect((await scim('DELETE', `/Users/${bob.id}`)).status).toBe(204);
    const gone = await scim('GET', `/Users/${bob.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '404' });
    expect((await scim('DELETE', `/Groups/${group.id}`)).status).toBe(204);
  });

  it('with the directory connected only its people sign in; one who signed in before is adopted, not duplicated', async () => {
    const early = await labToken('early-sub', 'early@lab.example');
    expect((await h.request('GET', '/auth/me', { key: early })).statusCode).toBe(401);
    expect((await h.request('GET', '/auth/me', { key: await labToken('stranger', 'stranger@lab.example') })).statusCode).toBe(401);
    const created = await scim('POST', '/Users', { schemas: [USER], userName: 'EARLY@lab.example', active: true });
    expect(created.status).toBe(201);
    expect(created.body!.id).toBe(earlyId);
    expect((await h.request('GET', '/auth/me', { key: early })).statusCode).toBe(200);
    // A token whose email the provider has not verified finds nobody; the same email verified does.
    const kim = (await scim('POST', '/Users', { schemas: [USER], userName: 'kim@lab.example', active: true })).body!;
    expect((await h.request('GET', '/auth/me', { key: await labToken('kim-sub', 'kim@lab.example', false) })).statusCode).toBe(401);
    const kimMe = await h.ok<{ identity: { identityId: string } }>('GET', '/auth/me', { key: await labToken('kim-sub', 'kim@lab.example') });
    expect(kimMe.identity.identityId).toBe(kim.id);
    // Deactivating the adopted user stops the sign-in that existed before the directory.
    await scim('PATCH', `/Users/${earlyId}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect((await h.request('GET', '/auth/me', { key: early })).statusCode).toBe(401);
  });

  it('refuses what it does not support and bad tokens, with SCIM errors; a new token replaces the old', async () => {
    const noToken = await h.app.inject({ method: 'GET', url: '/scim/v2/Users' });
    expect(noToken.statusCode).toBe(401);
    expect(JSON.parse(noToken.body)).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '401', error: { code: 'UNAUTHENTICATED' } });
    // An API key is not a SCIM token, and a SCIM token is not an API key.
    expect((await scim('GET', '/Users', undefined, h.ownerKey)).status).toBe(401);
    expect((await h.request('GET', '/v1/projects', { key: token })).statusCode).toBe(401);
    expect((await scim('GET', `/Users?filter=${encodeURIComponent('userName co "jane"')}`)).body).toMatchObject({ status: '400', scimType: 'invalidFilter' });
    expect((await scim('PATCH', '/Users/nope', { Operations: [{ op: 'replace', value: { active: false } }] })).status).toBe(404);
    expect((await scim('POST', '/Users', { schemas: [USER] })).body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    expect((await scim('POST', '/Groups', { displayName: 'X', members: [{ value: 'not-a-user' }] })).body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    const member = await h.createKey({ purpose: 'member', role: 'member' });
    expect((await h.request('POST', `/v1/orgs/${h.orgId}/scim/token`, { key: member.apiKey, body: {} })).statusCode).toBe(403);

    const old = token;
    token = (await h.ok<{ token: string }>('POST', `/v1/orgs/${h.orgId}/scim/token`, { body: {}, status: 201 })).token;
    expect((await scim('GET', '/Users', undefined, old)).status).toBe(401);
    expect((await scim('GET', '/Users')).status).toBe(200);
  });
});
