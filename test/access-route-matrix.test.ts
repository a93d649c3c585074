// Every route of the API (read from /openapi.json, so a new route must be classified here or this
// fails) × every kind of caller: owner, admin, member, viewer; a member narrowed to read on the
// project; a key scoped to another project; the owner of another organization. Each cell's expected
// status follows from rules written here, independently of engine/access:
//
// - project routes: another organization's caller and a key scoped to another project get 404 with
//   the code a project that does not exist gets; otherwise the role (narrowed by the membership)
//   must reach the route's action (read < write < manage) or it is 403;
// - organization routes: another organization's caller gets 404, a project-scoped key 403, then the
//   role decides;
// - routes about the caller themself answer everyone; SCIM answers no API key at all.
//
// 'provisioned' is a person the organization's directory provisioned (SCIM, default role member),
// signed in with a token of the organization's own SSO issuer: the same rules as a member.
//
// A refused call must also change nothing (the audit log, the project's history, keys, members).
// An allowed call must get past authorization: any answer but 401, 403 or a "not visible" 404.

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

type Caller = 'owner' | 'admin' | 'member' | 'viewer' | 'readOnProject' | 'keyOfOtherProject' | 'otherOrg' | 'provisioned';
type Action = 'read' | 'write' | 'manage';
const CALLERS: Caller[] = ['owner', 'admin', 'member', 'viewer', 'readOnProject', 'keyOfOtherProject', 'otherOrg', 'provisioned'];

type Level =
  | { on: 'project'; action: Action }
  | { on: 'org'; action: Action }
  /** the caller's own things (or their own organization's): everyone may */
  | { on: 'self' }
  | { on: 'public' }
  | { on: 'scim' }
  /** explicit per-caller expectations (key routes, project creation) */
  | { on: 'custom'; expect: Record<Caller, 'ok' | 403 | 404> };

interface Route {
  level: Level;
  body?: unknown;
  payload?: string;
  query?: string;
}

const RANK: Record<Action, number> = { read: 1, write: 2, manage: 3 };
const ROLE_CAPABILITY: Record<Caller, number> = { owner: 3, admin: 3, member: 2, viewer: 1, readOnProject: 2, keyOfOtherProject: 2, otherOrg: 3, provisioned: 2 };
/** Codes that mean "not permitted" or "not visible": an allowed caller must never get one. */
const DENIALS = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'PROJECT_NOT_FOUND', 'ORG_NOT_FOUND', 'KEY_NOT_FOUND']);

const project = (action: Action): Level => ({ on: 'project', action });
const org = (action: Action): Level => ({ on: 'org', action });
const HASH = 'blake3:' + '0'.repeat(64);

// Placeholders: {P} the project, {A} the organization, {S} a snapshot, {V} a version, {H} its content
// hash, {K} a member key, {I} a member identity, {C} an SSO connection.
const ROUTES: Record<string, Route> = {
  'get /healthz': { level: { on: 'public' } },
  'get /openapi.json': { level: { on: 'public' } },
  'get /': { level: { on: 'public' } },
  'get /ui/': { level: { on: 'public' } },
  'get /ui/{name}': { level: { on: 'public' } },
  'get /ui/open': { level: { on: 'public' } },
  'post /auth/resolve': { level: { on: 'public' }, body: { email: 'a@b.example', clientKind: 'cli' } },
  'get /auth/web/callback': { level: { on: 'public' } },
  'post /auth/web/logout': { level: { on: 'public' }, body: {} },
  'get /auth/me': { level: { on: 'self' } },
  'patch /auth/me/preferences': { level: { on: 'self' }, body: { theme: 'dark' } },
  'get /v1/orgs': { level: { on: 'self' } },
  'get /v1/projects': { level: { on: 'self' } },
  'get /v1/keys': { level: { on: 'self' } },
  'post /v1/projects': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 'ok', viewer: 403, readOnProject: 'ok', keyOfOtherProject: 403, otherOrg: 'ok', provisioned: 'ok' } },
    body: { name: 'made by the matrix' },
  },
  'post /v1/keys': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 'ok', viewer: 403, readOnProject: 'ok', keyOfOtherProject: 'ok', otherOrg: 'ok', provisioned: 'ok' } },
    body: { purpose: 'made by the matrix', role: 'viewer' },
  },
  // {K} is a member key the owner made: admins may revoke it; only an owner (or the key, or its
  // creator) may rotate it and get the new secret; others do not see it.
  'post /v1/keys/{keyId}/rotate': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 403, member: 404, viewer: 404, readOnProject: 404, keyOfOtherProject: 404, otherOrg: 404, provisioned: 404 } },
    body: {},
  },
  'post /v1/keys/{keyId}/revoke': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 404, viewer: 404, readOnProject: 404, keyOfOtherProject: 404, otherOrg: 404, provisioned: 404 } },
    body: {},
  },
  // fsck of the caller's own organization; gc acts on the store all organizations share, so with two
  // organizations on the server (as here) it is the operator's, refused to everyone over the API.
  'post /v1/admin/gc': {
    level: { on: 'custom', expect: { owner: 403, admin: 403, member: 403, viewer: 403, readOnProject: 403, keyOfOtherProject: 403, otherOrg: 403, provisioned: 403 } },
    body: {},
  },
  'post /v1/admin/fsck': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 403, viewer: 403, readOnProject: 403, keyOfOtherProject: 403, otherOrg: 'ok', provisioned: 403 } },
    body: {},
  },

  'get /v1/projects/{projectId}': { level: project('read') },
  'get /v1/projects/{projectId}/policy': { level: project('read') },
  'put /v1/projects/{projectId}/policy': { level: project('manage'), body: { sizeThreshold: 52_428_800 } },
  'put /v1/projects/{projectId}/fs/write': { level: project('write'), query: 'path=matrix.txt', payload: 'x' },
  'get /v1/projects/{projectId}/fs/read': { level: project('read'), query: 'path=notes.md' },
  'get /v1/projects/{projectId}/fs/stat': { level: project('read'), query: 'path=notes.md' },
  'post /v1/projects/{projectId}/fs/delete': { level: project('write'), body: { path: 'not-there.txt' } },
  'get /v1/projects/{projectId}/fs/dir': { level: project('read') },
  'post /v1/projects/{projectId}/fs/rename': { level: project('write'), body: { from: 'not-there.txt', to: 'nor-here.txt' } },
  'get /v1/projects/{projectId}/history': { level: project('read'), query: 'path=notes.md' },
  'get /v1/projects/{projectId}/history/{versionId}': { level: project('read') },
  'get /v1/projects/{projectId}/history/diff': { level: project('read'), query: 'a={versionId}&b={versionId}' },
  'get /v1/projects/{projectId}/history/{versionId}/rename': { level: project('read') },
  'post /v1/projects/{projectId}/history/restore': { level: project('write'), body: { versionId: '{V}' } },
  'post /v1/projects/{projectId}/sync/objects/missing': { level: project('write'), body: { hashes: [HASH] } },
  'post /v1/projects/{projectId}/sync/versions': { level: project('write'), body: { workstation: 'matrix', versions: [] } },
  'get /v1/projects/{projectId}/sync/objects/{hash}': { level: project('read') },
  'post /v1/projects/{projectId}/sync/objects/read': { level: project('read'), body: { hashes: [HASH] } },
  'post /v1/projects/{projectId}/sync/snapshots': {
    level: project('write'),
    body: { snapshotId: '01a20000-0000-7000-8000-000000000000', message: 'm', timestamp: '2026-11-26T00:00:00.000Z', entries: [], partial: true },
  },
  'get /v1/projects/{projectId}/sync/snapshots': { level: project('read') },
  'get /v1/projects/{projectId}/sync/changes': { level: project('read') },
  'put /v1/projects/{projectId}/sync/objects/{hash}': { level: project('write'), payload: 'x' },
  'put /v1/projects/{projectId}/sync/datasets/{manifestHash}': { level: project('write'), payload: 'x' },
  'post /v1/projects/{projectId}/sync/objects/compose': { level: project('write'), payload: '{"objects":[]}\n' },
  'post /v1/projects/{projectId}/sync/objects': { level: project('write'), payload: '' },
  'post /v1/projects/{projectId}/fs/snapshots': { level: project('write'), body: { message: 'matrix' } },
  'get /v1/projects/{projectId}/fs/snapshots': { level: project('read') },
  'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}': { level: project('read') },
  'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}/entries': { level: project('read') },
  'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}/diff': { level: project('read') },
  'post /v1/projects/{projectId}/fs/snapshots/{snapshotId}/restore': { level: project('write'), body: {} },
  'post /v1/projects/{projectId}/fs/snapshots/{snapshotId}/tags': { level: project('write'), body: { tag: 'matrix' } },
  'get /v1/projects/{projectId}/fs/tags': { level: project('read') },
  'delete /v1/projects/{projectId}/fs/tags/{tag}': { level: project('write') },
  'get /v1/projects/{projectId}/fs/retention': { level: project('read') },
  'post /v1/projects/{projectId}/fs/retention': { level: project('manage'), body: { maxVersions: 0 } },
  'get /v1/projects/{projectId}/fs/datasets': { level: project('read') },
  'post /v1/projects/{projectId}/fs/datasets/track': { level: project('manage'), body: { pattern: '*.h5' } },
  'post /v1/projects/{projectId}/fs/datasets/untrack': { level: project('manage'), body: { pattern: '*.h5' } },
  'post /v1/projects/{projectId}/fs/datasets/threshold': { level: project('manage'), body: { thresholdBytes: 67_108_864 } },
  'get /v1/projects/{projectId}/fs/dataset/manifest': { level: project('read'), query: 'path=notes.md' },
  'get /v1/projects/{projectId}/fs/dataset/history': { level: project('read'), query: 'path=notes.md' },
  'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}/git-export': { level: project('read') },
  'get /v1/projects/{projectId}/fs/git/refs': { level: project('read') },
  'get /v1/projects/{projectId}/fs/git/upload': { level: project('read') },
  'post /v1/projects/{projectId}/fs/git/receive': { level: project('write'), payload: '' },
  'get /v1/projects/{projectId}/members': { level: project('read') },
  // Administering a project's members is an organization function: the membership does not narrow it.
  'put /v1/projects/{projectId}/members/{identityId}': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 403, viewer: 403, readOnProject: 403, keyOfOtherProject: 404, otherOrg: 404, provisioned: 403 } },
    body: { access: 'write' },
  },
  'delete /v1/projects/{projectId}/members/{identityId}': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 403, viewer: 403, readOnProject: 403, keyOfOtherProject: 404, otherOrg: 404, provisioned: 403 } },
  },

  'post /v1/orgs/{orgId}/identities': { level: org('manage'), body: { kind: 'service', name: 'matrix', role: 'viewer' } },
  'get /v1/orgs/{orgId}/members': { level: org('read') },
  'put /v1/orgs/{orgId}/members/{identityId}': { level: org('manage'), body: { role: 'viewer' } },
  'delete /v1/orgs/{orgId}/members/{identityId}': { level: org('manage') },
  'get /v1/orgs/{orgId}/audit': { level: org('manage') },
  'post /v1/orgs/{orgId}/sso': { level: org('manage'), body: { issuer: 'https://idp.lab.example', clientId: 'c', audience: 'a', domains: ['matrix.example'] } },
  'get /v1/orgs/{orgId}/sso': { level: org('manage') },
  'get /v1/orgs/{orgId}/sso/{connectionId}': { level: org('manage') },
  'post /v1/orgs/{orgId}/sso/{connectionId}/domains/{domain}/verify': { level: org('manage'), body: {} },
  'post /v1/orgs/{orgId}/sso/{connectionId}/test': { level: org('manage'), body: { accessToken: 'a.b.c' } },
  'post /v1/orgs/{orgId}/sso/{connectionId}/activate': { level: org('manage'), body: {} },
  'post /v1/orgs/{orgId}/sso/{connectionId}/deactivate': { level: org('manage'), body: {} },
  'get /v1/orgs/{orgId}/sso-diagnosis': { level: org('manage'), query: 'email=a%40lab.example' },
  'post /v1/orgs/{orgId}/scim/token': { level: org('manage'), body: {} },
  'get /v1/orgs/{orgId}/scim': { level: org('manage') },
  'put /v1/orgs/{orgId}/scim/roles': { level: org('manage'), body: { defaultRole: 'member', groupRoles: {} } },

  'get /scim/v2/ServiceProviderConfig': { level: { on: 'scim' } },
  'get /scim/v2/ResourceTypes': { level: { on: 'scim' } },
  'get /scim/v2/Schemas': { level: { on: 'scim' } },
  'get /scim/v2/Users': { level: { on: 'scim' } },
  'post /scim/v2/Users': { level: { on: 'scim' }, body: { userName: 'x@lab.example' } },
  'get /scim/v2/Users/{id}': { level: { on: 'scim' } },
  'put /scim/v2/Users/{id}': { level: { on: 'scim' }, body: { userName: 'x@lab.example' } },
  'patch /scim/v2/Users/{id}': { level: { on: 'scim' }, body: { Operations: [{ op: 'replace', value: { active: false } }] } },
  'delete /scim/v2/Users/{id}': { level: { on: 'scim' } },
  'get /scim/v2/Groups': { level: { on: 'scim' } },
  'post /scim/v2/Groups': { level: { on: 'scim' }, body: { displayName: 'x' } },
  'get /scim/v2/Groups/{id}': { level: { on: 'scim' } },
  'put /scim/v2/Groups/{id}': { level: { on: 'scim' }, body: { displayName: 'x' } },
  'patch /scim/v2/Groups/{id}': { level: { on: 'scim' }, body: { Operations: [{ op: 'replace', path: 'displayName', value: 'y' }] } },
  'delete /scim/v2/Groups/{id}': { level: { on: 'scim' } },
  // Any caller for themselves, but a session would widen a project-scoped key: refused.
  'post /v1/ui/links': {
    level: { on: 'custom', expect: { owner: 'ok', admin: 'ok', member: 'ok', viewer: 'ok', readOnProject: 'ok', keyOfOtherProject: 403, otherOrg: 'ok', provisioned: 'ok' } },
    body: {},
  },
};

let h: Harness;
const keys = {} as Record<Caller, string>;
const params: Record<string, string> = {};
let ghostProject: string;
let lab: TestProvider;
const txt = new Map<string, string[][]>();

function expected(level: Level, caller: Caller): 'ok' | { status: number; code?: string } {
  switch (level.on) {
    case 'public':
    case 'self':
      return 'ok';
    case 'scim':
      return { status: 401, code: 'UNAUTHENTICATED' };
    case 'custom': {
      const cell = level.expect[caller];
      return cell === 'ok' ? 'ok' : { status: cell };
    }
    case 'project': {
      if (caller === 'otherOrg' || caller === 'keyOfOtherProject') return { status: 404, code: 'PROJECT_NOT_FOUND' };
      const capability = caller === 'readOnProject' ? 1 : ROLE_CAPABILITY[caller];
      return capability >= RANK[level.action] ? 'ok' : { status: 403, code: 'FORBIDDEN' };
    }
    case 'org': {
      if (caller === 'otherOrg') return { status: 404, code: 'ORG_NOT_FOUND' };
      if (caller === 'keyOfOtherProject') return { status: 403, code: 'FORBIDDEN' };
      return ROLE_CAPABILITY[caller] >= RANK[level.action] ? 'ok' : { status: 403, code: 'FORBIDDEN' };
    }
  }
}

function fill(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? `missing-${name}`));
}

async function call(routeKey: string, route: Route, caller: Caller, values = params) {
  const [method, path] = routeKey.split(' ') as [string, string];
  const url = fill(path, values) + (route.query === undefined ? '' : `?${fill(route.query, values)}`);
  const body = route.body === undefined ? undefined : JSON.parse(JSON.stringify(route.body).replace('{V}', values['versionId']!));
  if (route.payload !== undefined) {
    return h.request(method.toUpperCase() as 'PUT', url, { key: keys[caller], payload: route.payload, headers: { 'content-type': 'application/octet-stream' } });
  }
  return h.request(method.toUpperCase() as 'GET', url, { key: keys[caller], ...(body === undefined ? {} : { body }) });
}

/** What a refused call must not change. */
async function state(): Promise<string> {
  const audit = await h.ok<{ items: unknown[] }>('GET', `/v1/orgs/${params['orgId']}/audit?limit=1000`);
  const history = await h.ok<{ items: Array<{ versionId: string }> }>('GET', `/v1/projects/${params['projectId']}/history?limit=1000`);
  const snapshots = await h.ok<{ items: Array<{ snapshotId: string }> }>('GET', `/v1/projects/${params['projectId']}/fs/snapshots`);
  const members = await h.ok('GET', `/v1/orgs/${params['orgId']}/members`);
  const projectMembers = await h.ok('GET', `/v1/projects/${params['projectId']}/members`);
  const allKeys = await h.ok('GET', '/v1/keys');
  return JSON.stringify([audit.items.length, history.items.map((v) => v.versionId), snapshots.items.map((s) => s.snapshotId), members, projectMembers, allKeys]);
}

beforeAll(async () => {
  h = await openHarness({ clockStart: Date.now(), txtResolver: async (name) => txt.get(name) ?? [] });
  const projectId = await h.createProject('matrix');
  const other = await h.createProject('other project');
  ghostProject = '01a2ffff-ffff-7fff-bfff-ffffffffffff';
  const written = await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=notes.md`, { payload: 'hello', headers: { 'content-type': 'application/octet-stream' } });
  const write = written.json() as { version: { versionId: string; contentHash: string } };
  const snapshot = await h.ok<{ snapshotId: string }>('POST', `/v1/projects/${projectId}/fs/snapshots`, { body: { message: 'fixture' }, status: 201 });
  await h.ok('POST', `/v1/projects/${projectId}/fs/snapshots/${snapshot.snapshotId}/tags`, { body: { tag: 'v1' }, status: 201 });
  const target = await h.ok<{ identity: { identityId: string } }>('POST', `/v1/orgs/${h.orgId}/identities`, { body: { kind: 'service', name: 'target', role: 'viewer' }, status: 201 });
  const connection = await h.ok<{ connectionId: string }>('POST', `/v1/orgs/${h.orgId}/sso`, {
    body: { issuer: 'https://idp.matrix.example', clientId: 'c', audience: 'a', domains: ['matrix.example'] },
    status: 201,
  });
  const memberKey = await h.createKey({ purpose: 'target key', role: 'member' });
  Object.assign(params, {
    projectId,
    orgId: h.orgId,
    snapshotId: snapshot.snapshotId,
    versionId: write.version.versionId,
    hash: write.version.contentHash,
    manifestHash: write.version.contentHash,
    tag: 'v1',
    identityId: target.identity.identityId,
    keyId: memberKey.keyId,
    connectionId: connection.connectionId,
    domain: 'matrix.example',
    id: '01a2eeee-eeee-7eee-beee-eeeeeeeeeeee',
  });

  keys.owner = h.ownerKey;
  keys.admin = (await h.createKey({ purpose: 'admin', role: 'admin' })).apiKey;
  keys.member = (await h.createKey({ purpose: 'member', role: 'member' })).apiKey;
  keys.viewer = (await h.createKey({ purpose: 'viewer', role: 'viewer' })).apiKey;
  const narrowed = await h.createKey({ purpose: 'read on the project', role: 'member' });
  await h.ok('PUT', `/v1/projects/${projectId}/members/${narrowed.identityId}`, { body: { access: 'read' } });
  keys.readOnProject = narrowed.apiKey;
  keys.keyOfOtherProject = (await h.createKey({ purpose: 'other project', role: 'member', projectId: other })).apiKey;
  keys.otherOrg = (await h.createOrganization('Elsewhere')).apiKey;

  // The provisioned person: the lab's own provider as an active SSO connection, a SCIM user, a token.
  lab = await startTestProvider({ audience: 'api://lab' });
  const sso = await h.ok<{ connectionId: string; domains: Array<{ verificationToken: string }> }>('POST', `/v1/orgs/${h.orgId}/sso`, {
    body: { issuer: lab.issuer, clientId: CLI_CLIENT_ID, audience: 'api://lab', domains: ['lab.example'] },
    status: 201,
  });
  txt.set('lab.example', [[`strata-domain-verification=${sso.domains[0]!.verificationToken}`]]);
  await h.ok('POST', `/v1/orgs/${h.orgId}/sso/${sso.connectionId}/domains/lab.example/verify`, { body: {} });
  await h.ok('POST', `/v1/orgs/${h.orgId}/sso/${sso.connectionId}/test`, { body: { accessToken: await labToken('it') } });
  await h.ok('POST', `/v1/orgs/${h.orgId}/sso/${sso.connectionId}/activate`, { body: {} });
  const scimToken = (await h.ok<{ token: string }>('POST', `/v1/orgs/${h.orgId}/scim/token`, { body: {}, status: 201 })).token;
  const provisioned = await h.app.inject({
    method: 'POST',
    url: '/scim/v2/Users',
    headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
    payload: JSON.stringify({ userName: 'prov@lab.example', active: true }),
  });
  expect(provisioned.statusCode).toBe(201);
  keys.provisioned = await labToken('prov-sub', 'prov@lab.example');
}, 60_000);

async function labToken(sub: string, email = `${sub}@lab.example`): Promise<string> {
  const key = lab.keys[0]!;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: lab.issuer, aud: 'api://lab', sub, iat: now, exp: now + 3600, client_id: CLI_CLIENT_ID, email, email_verified: true })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
    .sign(key.privateKey);
}

afterAll(async () => {
  await h?.dispose();
  await lab?.close();
});

describe('every route × every caller', () => {
  it('classifies every route the API serves', async () => {
    const doc = await h.ok<{ paths: Record<string, Record<string, unknown>> }>('GET', '/openapi.json', { key: null as never });
    const served = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`));
    expect(served.filter((route) => !(route in ROUTES))).toStrictEqual([]);
    expect(Object.keys(ROUTES).filter((route) => !served.includes(route))).toStrictEqual([]);
  });

  it('answers each cell as the rules say, refusals change nothing, and a refusal looks like absence', async () => {
    const wrong: string[] = [];
    for (const [routeKey, route] of Object.entries(ROUTES)) {
      if (route.level.on === 'public') continue;
      const mutating = !routeKey.startsWith('get ');
      // Refusals first (they must leave everything as it was), then the callers that may.
      const ordered = [...CALLERS].sort((a, b) => Number(expected(route.level, a) === 'ok') - Number(expected(route.level, b) === 'ok'));
      for (const caller of ordered) {
        const want = expected(route.level, caller);
        const before = want !== 'ok' && mutating ? await state() : null;
        const response = await call(routeKey, route, caller);
        const code = response.statusCode >= 400 ? (response.json() as { error?: { code: string } }).error?.code : undefined;
        if (want === 'ok') {
          if (response.statusCode === 401 || response.statusCode === 403 || (code !== undefined && DENIALS.has(code))) {
            wrong.push(`${routeKey} as ${caller}: expected to pass authorization, got ${response.statusCode} ${code}`);
          }
          continue;
        }
        if (response.statusCode !== want.status || (want.code !== undefined && code !== want.code)) {
          wrong.push(`${routeKey} as ${caller}: expected ${want.status} ${want.code ?? ''}, got ${response.statusCode} ${code}`);
        }
        if (before !== null && (await state()) !== before) wrong.push(`${routeKey} as ${caller}: refused, but something changed`);
        // "Not visible" must be indistinguishable from "does not exist".
        if (want.status === 404 && route.level.on === 'project') {
          const ghost = await call(routeKey, route, caller, { ...params, projectId: ghostProject });
          const ghostCode = (ghost.json() as { error?: { code: string } }).error?.code;
          if (ghost.statusCode !== response.statusCode || ghostCode !== code) wrong.push(`${routeKey} as ${caller}: ${code} differs from a missing project's ${ghostCode}`);
        }
      }
    }
    expect(wrong).toStrictEqual([]);
  }, 120_000);
});
