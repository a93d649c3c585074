import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { type Harness, openHarness } from './control-api-harness.js';

// Every class of error has the one body shape; bad input never changes a project's history.

function expectError(res: LightMyRequestResponse, status: number, code: string, details?: Record<string, unknown>) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  const body = res.json() as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error['code']).toBe(code);
  expect(body.error['message']).toEqual(expect.any(String));
  expect(body.error['requestId']).toBe(res.headers['x-request-id']);
  for (const key of Object.keys(body.error)) expect(['code', 'message', 'details', 'requestId', 'traceId']).toContain(key);
  if (details !== undefined) expect(body.error['details']).toMatchObject(details);
  return body.error;
}

describe('control API errors', () => {
  let h: Harness;
  let pid: string;
  let otherPid: string;
  const base = () => `/v1/projects/${pid}`;
  const state = async (projectId: string) => {
    const history = await h.ok('GET', `/v1/projects/${projectId}/history?limit=1000`);
    const snapshots = await h.ok('GET', `/v1/projects/${projectId}/fs/snapshots`);
    return JSON.stringify([history, snapshots]);
  };

  beforeAll(async () => {
    h = await openHarness({ maxUploadBytes: 1024, bodyLimit: 4096 });
    pid = await h.createProject('thesis');
    otherPid = await h.createProject('other');
    await h.ok('PUT', `${base()}/fs/write?path=a.m`, { body: 'one', status: 201 });
    await h.ok('PUT', `/v1/projects/${otherPid}/fs/write?path=b.m`, { body: 'other', status: 201 });
    await h.ok('POST', `${base()}/fs/snapshots`, { body: { message: 's1' }, status: 201 });
  });
  afterAll(async () => {
    await h.dispose();
  });

  it('uses the one error body for routing, parsing, validation, auth and engine errors', async () => {
    expectError(await h.request('GET', '/v1/nope'), 404, 'NOT_FOUND');
    expectError(await h.request('GET', '/v1/nope', { key: null }), 404, 'NOT_FOUND');
    expectError(await h.request('GET', '/v1/projects/01a2027b-0000-7000-8000-000000000000'), 404, 'PROJECT_NOT_FOUND');
    expectError(await h.request('POST', '/v1/projects', { payload: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'INVALID_BODY');
    expectError(await h.request('POST', '/v1/projects', { payload: 'name=x', headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(
      await h.request('POST', '/v1/projects', { payload: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(await h.request('POST', '/v1/projects', { body: { name: 'x'.repeat(5000) } }), 413, 'BODY_TOO_LARGE');
    expectError(await h.request('POST', '/v1/projects', { body: { name: 'x', color: 'red' } }), 400, 'INVALID_BODY', {
      field: 'color',
      reason: 'unknown field',
    });
    expectError(await h.request('POST', '/v1/projects', { body: { name: 7 } }), 400, 'INVALID_BODY', { field: 'name' });
    expectError(await h.request('POST', '/v1/projects', { body: {} }), 400, 'INVALID_BODY', { field: 'name', reason: 'required' });
    expectError(await h.request('POST', '/v1/projects', { body: [1, 2] }), 400, 'INVALID_BODY', { field: 'body' });
    const poisoned = '{"name":"x","__proto__":{"role":"owner"}}';
    expectError(await h.request('POST', '/v1/projects', { payload: poisoned, headers: { 'content-type': 'application/json' } }), 400, 'INVALID_BODY');
    expectError(await h.request('GET', '/v1/projects/%FF'), 400, 'INVALID_UTF8');
    expectError(await h.request('GET', `${base()}/history?limit=0`), 400, 'INVALID_QUERY', { field: 'limit' });
    expectError(await h.request('GET', `${base()}/history?limit=ten`), 400, 'INVALID_QUERY', { field: 'limit' });
    expectError(await h.request('GET', `${base()}/history?verbose=1`), 400, 'INVALID_QUERY', { field: 'verbose' });
    expectError(await h.request('GET', `${base()}/history?path=a.m&path=b.m`), 400, 'INVALID_QUERY', { field: 'path' });
    expectError(await h.request('GET', `${base()}/history?cursor=garbage`), 400, 'INVALID_CURSOR');
    expectError(await h.request('GET', '/v1/projects', { key: null }), 401, 'UNAUTHENTICATED');
    expectError(await h.request('GET', `${base()}/fs/read?path=a.m`, { headers: { range: 'bytes=100-' } }), 416, 'RANGE_NOT_SATISFIABLE');
    const stale = await h.request('PUT', `${base()}/fs/write?path=a.m&baseVersionId=`, { payload: 'x' });
    expectError(stale, 409, 'STALE_BASE_VERSION');
    await h.ok('POST', `${base()}/fs/snapshots/${(await h.ok<{ items: Array<{ snapshotId: string }> }>('GET', `${base()}/fs/snapshots`)).items[0]!.snapshotId}/tags`, {
      body: { tag: 'taken' },
      status: 201,
    });
    const snapshots = await h.ok<{ items: Array<{ snapshotId: string }> }>('GET', `${base()}/fs/snapshots`);
    expectError(await h.request('POST', `${base()}/fs/snapshots/${snapshots.items[0]!.snapshotId}/tags`, { body: { tag: 'taken' } }), 409, 'TAG_TAKEN');
    expectError(await h.request('POST', `${base()}/fs/snapshots/nope/restore`), 404, 'SNAPSHOT_NOT_FOUND');
  });

  it('answers 401 identically for every kind of bad credential', async () => {
    const [, env, keyId, secret] = h.ownerKey.split('.') as [string, string, string, string];
    const revoked = await h.createKey({ purpose: 'revoked' });
    await h.ok('POST', `/v1/keys/${revoked.keyId}/revoke`);
    const expiring = await h.createKey({ purpose: 'expiring', expiresInDays: 1 });
    const rotating = await h.createKey({ purpose: 'rotating' });
    await h.ok('POST', `/v1/keys/${rotating.keyId}/rotate`, { body: { graceSeconds: 10 }, status: 201 });
    h.clock.advance(86_400_000);
    const otherSecret = Buffer.alloc(32, 7).toString('base64url');
    const variants: Array<[string, Record<string, string>]> = [
      ['missing', {}],
      ['basic', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['garbled', { authorization: 'Bearer not-a-key' }],
      ['truncated', { authorization: `Bearer ${h.ownerKey.slice(0, -1)}` }],
      ['unknown id', { authorization: `Bearer rk.${env}.0123456789abcdef.${secret}` }],
      ['wrong secret', { authorization: `Bearer rk.${env}.${keyId}.${otherSecret}` }],
      ['wrong environment', { authorization: `Bearer rk.prod.${keyId}.${secret}` }],
      ['revoked', { authorization: `Bearer ${revoked.apiKey}` }],
      ['expired', { authorization: `Bearer ${expiring.apiKey}` }],
      ['rotated, grace over', { authorization: `Bearer ${rotating.apiKey}` }],
    ];
    const seen = new Set<string>();
    for (const [label, headers] of variants) {
      const res = await h.request('GET', `${base()}/history`, { key: null, headers });
      const error = expectError(res, 401, 'UNAUTHENTICATED');
      expect(res.headers['www-authenticate'], label).toBe('Bearer');
      const { requestId: _id, ...rest } = error;
      seen.add(JSON.stringify(rest));
    }
    expect([...seen]).toEqual([JSON.stringify({ code: 'UNAUTHENTICATED', message: 'Authentication required' })]);
  });

  it('honours the rotation grace period on the injected clock', async () => {
    const ci = await h.createKey({ purpose: 'ci', projectId: pid });
    const rotated = await h.ok<{ apiKey: string }>('POST', `/v1/keys/${ci.keyId}/rotate`, { body: { graceSeconds: 300 }, status: 201, key: ci.apiKey });
    h.clock.advance(299_999);
    expect((await h.request('GET', `${base()}/history`, { key: ci.apiKey })).statusCode).toBe(200);
    h.clock.advance(1);
    expectError(await h.request('GET', `${base()}/history`, { key: ci.apiKey }), 401, 'UNAUTHENTICATED');
    expect((await h.request('GET', `${base()}/history`, { key: rotated.apiKey })).statusCode).toBe(200);
  });

  it('hides other projects from a project-scoped key and refuses it org routes', async () => {
    const scoped = await h.createKey({ purpose: 'ci', projectId: pid, role: 'admin' });
    expect((await h.request('GET', `${base()}/history`, { key: scoped.apiKey })).statusCode).toBe(200);
    const hidden = expectError(await h.request('GET', `/v1/projects/${otherPid}/history`, { key: scoped.apiKey }), 404, 'PROJECT_NOT_FOUND');
    const missing = expectError(
      await h.request('GET', '/v1/projects/01a2027b-0000-7000-8000-000000000000/history', { key: scoped.apiKey }),
      404,
      'PROJECT_NOT_FOUND',
    );
    expect(hidden['message']).toBe(missing['message']);
    const before = await state(otherPid);
    expectError(await h.request('PUT', `/v1/projects/${otherPid}/fs/write?path=x.m`, { key: scoped.apiKey, payload: 'x' }), 404, 'PROJECT_NOT_FOUND');
    expect(await state(otherPid)).toBe(before);
    expectError(await h.request('GET', `/v1/orgs/${h.orgId}/members`, { key: scoped.apiKey }), 403, 'FORBIDDEN');
    expectError(await h.request('GET', `/v1/orgs/${h.orgId}/audit`, { key: scoped.apiKey }), 403, 'FORBIDDEN');
    expectError(await h.request('POST', '/v1/admin/gc', { key: scoped.apiKey }), 403, 'FORBIDDEN');
    expectError(await h.request('POST', '/v1/projects', { key: scoped.apiKey, body: { name: 'new' } }), 403, 'FORBIDDEN');
    expectError(await h.request('POST', '/v1/keys', { key: scoped.apiKey, body: { purpose: 'x', projectId: otherPid } }), 404, 'PROJECT_NOT_FOUND');
  });

  it('forbids writes to viewers and to members narrowed to read', async () => {
    const viewer = await h.createKey({ purpose: 'viewer', role: 'viewer' });
    const member = await h.createKey({ purpose: 'member', role: 'member' });
    await h.ok('PUT', `${base()}/members/${member.identityId}`, { body: { access: 'read' } });
    const before = await state(pid);
    for (const key of [viewer.apiKey, member.apiKey]) {
      expect((await h.request('GET', `${base()}/fs/read?path=a.m`, { key })).body).toBe('one');
      expectError(await h.request('PUT', `${base()}/fs/write?path=a.m`, { key, payload: 'two' }), 403, 'FORBIDDEN');
      expectError(await h.request('POST', `${base()}/fs/delete`, { key, body: { path: 'a.m' } }), 403, 'FORBIDDEN');
      expectError(await h.request('POST', `${base()}/fs/snapshots`, { key, body: {} }), 403, 'FORBIDDEN');
      expectError(await h.request('POST', `${base()}/fs/retention`, { key, body: { maxVersions: 1 } }), 403, 'FORBIDDEN');
    }
    expect(await state(pid)).toBe(before);
    // the member writes elsewhere: narrowing is per project
    expect((await h.request('PUT', `/v1/projects/${otherPid}/fs/write?path=m.m`, { key: member.apiKey, payload: 'm' })).statusCode).toBe(201);
    // a member may not manage (retention) even with no narrowing
    expectError(await h.request('POST', `/v1/projects/${otherPid}/fs/retention`, { key: member.apiKey, body: { maxVersions: 1 } }), 403, 'FORBIDDEN');
  });

  it('rejects bad input with a coded 4xx and leaves history untouched', async () => {
    const other = await h.ok<{ items: Array<{ versionId: string }> }>('GET', `/v1/projects/${otherPid}/history`);
    const foreignVersion = other.items[0]!.versionId;
    const cases: Array<[string, () => Promise<LightMyRequestResponse>, number, string, Record<string, unknown>?]> = [];
    const badPaths = ['../x', '/abs', 'a/../b', 'a%00b', 'a%01b', 'a%7Fb', `${'n'.repeat(256)}.m`, '%FF', '%C3%28', 'a//b', 'a%5Cb', '', './a', 'a/', '%E2%80%A8'];
    for (const p of badPaths) {
      cases.push([`write ${p}`, () => h.request('PUT', `${base()}/fs/write?path=${p}`, { payload: 'evil' }), 422, 'INVALID_PATH', { field: 'path' }]);
      cases.push([`read ${p}`, () => h.request('GET', `${base()}/fs/read?path=${p}`), 422, 'INVALID_PATH', { field: 'path' }]);
      cases.push([`history ${p}`, () => h.request('GET', `${base()}/history?path=${p}`), 422, 'INVALID_PATH', { field: 'path' }]);
    }
    for (const p of ['../x', '/abs', 'a/../b', 'a\u0000b', 'a\u0007b', 'x'.repeat(300)]) {
      cases.push([`delete ${JSON.stringify(p)}`, () => h.request('POST', `${base()}/fs/delete`, { body: { path: p } }), 422, 'INVALID_PATH', { field: 'path' }]);
      cases.push([`rename to ${JSON.stringify(p)}`, () => h.request('POST', `${base()}/fs/rename`, { body: { from: 'a.m', to: p } }), 422, 'INVALID_PATH', { field: 'to' }]);
    }
    cases.push(
      ['write without path', () => h.request('PUT', `${base()}/fs/write`, { payload: 'x' }), 400, 'INVALID_QUERY', { field: 'path' }],
      ['write unknown query', () => h.request('PUT', `${base()}/fs/write?path=a.m&mode=append`, { payload: 'x' }), 400, 'INVALID_QUERY', { field: 'mode' }],
      ['delete unknown field', () => h.request('POST', `${base()}/fs/delete`, { body: { path: 'a.m', force: true } }), 400, 'INVALID_BODY', { field: 'force' }],
      ['delete wrong type', () => h.request('POST', `${base()}/fs/delete`, { body: { path: 5 } }), 400, 'INVALID_BODY', { field: 'path' }],
      ['rename missing to', () => h.request('POST', `${base()}/fs/rename`, { body: { from: 'a.m' } }), 400, 'INVALID_BODY', { field: 'to' }],
      ['retention string', () => h.request('POST', `${base()}/fs/retention`, { body: { maxVersions: '5' } }), 400, 'INVALID_BODY', { field: 'maxVersions' }],
      ['retention negative', () => h.request('POST', `${base()}/fs/retention`, { body: { maxVersions: -1 } }), 400, 'INVALID_BODY', { field: 'maxVersions' }],
      ['retention fraction', () => h.request('POST', `${base()}/fs/retention`, { body: { maxVersions: 1.5 } }), 400, 'INVALID_BODY', { field: 'maxVersions' }],
      ['retention extra', () => h.request('POST', `${base()}/fs/retention`, { body: { maxVersions: 1, keepAll: true } }), 400, 'INVALID_BODY', { field: 'keepAll' }],
      ['restore unknown version', () => h.request('POST', `${base()}/history/restore`, { body: { versionId: '01a2027b-0000-7000-8000-000000000000' } }), 404, 'VERSION_NOT_FOUND'],
      ['restore version of another project', () => h.request('POST', `${base()}/history/restore`, { body: { versionId: foreignVersion } }), 404, 'VERSION_NOT_FOUND'],
      ['read version of another project', () => h.request('GET', `${base()}/fs/read?versionId=${foreignVersion}`), 404, 'VERSION_NOT_FOUND'],
      ['get version of another project', () => h.request('GET', `${base()}/history/${foreignVersion}`), 404, 'VERSION_NOT_FOUND'],
      ['restore without versionId', () => h.request('POST', `${base()}/history/restore`, { body: {} }), 400, 'INVALID_BODY', { field: 'versionId' }],
      ['snapshot unknown field', () => h.request('POST', `${base()}/fs/snapshots`, { body: { message: 'm', pin: true } }), 400, 'INVALID_BODY', { field: 'pin' }],
      ['snapshot message type', () => h.request('POST', `${base()}/fs/snapshots`, { body: { message: 42 } }), 400, 'INVALID_BODY', { field: 'message' }],
      ['snapshot restore with body', () => h.request('POST', `${base()}/fs/snapshots/taken/restore`, { body: { force: true } }), 400, 'INVALID_BODY', { field: 'force' }],
      ['bad tag', () => h.request('POST', `${base()}/fs/snapshots/taken/tags`, { body: { tag: '../v1' } }), 400, 'INVALID_BODY', { field: 'tag' }],
      ['unknown snapshot', () => h.request('POST', `${base()}/fs/snapshots/01a2027b-0000-7000-8000-000000000000/restore`), 404, 'SNAPSHOT_NOT_FOUND'],
      ['garbled key', () => h.request('PUT', `${base()}/fs/write?path=a.m`, { key: 'rk.test.zz.zz', payload: 'x' }), 401, 'UNAUTHENTICATED'],
      ['key in wrong header form', () => h.request('PUT', `${base()}/fs/write?path=a.m`, { key: null, headers: { authorization: h.ownerKey }, payload: 'x' }), 401, 'UNAUTHENTICATED'],
      ['stale base version', () => h.request('PUT', `${base()}/fs/write?path=a.m&baseVersionId=${foreignVersion}`, { payload: 'x' }), 409, 'STALE_BASE_VERSION'],
    );

    const before = await state(pid);
    const otherBefore = await state(otherPid);
    for (const [label, run, status, code, details] of cases) {
      const res = await run();
      expect(res.statusCode, `${label}: ${res.body}`).toBe(status);
      expect(res.json().error.code, label).toBe(code);
      if (details !== undefined) expect(res.json().error.details, label).toMatchObject(details);
    }
    expect(await state(pid)).toBe(before);
    expect(await state(otherPid)).toBe(otherBefore);
    expect((await h.request('GET', `${base()}/fs/read?path=a.m`)).body).toBe('one');
  });

  it('refuses uploads over the limit, declared or streamed, and stores nothing', async () => {
    const before = await state(pid);
    const declared = await h.request('PUT', `${base()}/fs/write?path=big.bin`, { payload: Buffer.alloc(2000) });
    expectError(declared, 413, 'BODY_TOO_LARGE');
    // chunked: no Content-Length, the limit is enforced while streaming
    const streamed = await h.app.inject({
      method: 'PUT',
      url: `${base()}/fs/write?path=big.bin`,
      headers: { authorization: `Bearer ${h.ownerKey}`, 'transfer-encoding': 'chunked', 'content-type': 'application/octet-stream' },
      payload: Readable.from([Buffer.alloc(600), Buffer.alloc(600)]),
    });
    expectError(streamed, 413, 'BODY_TOO_LARGE');
    expect(await state(pid)).toBe(before);
    expectError(await h.request('GET', `${base()}/fs/stat?path=big.bin`), 404, 'PATH_NOT_FOUND');
    // at the limit is fine
    expect((await h.request('PUT', `${base()}/fs/write?path=ok.bin`, { payload: Buffer.alloc(1024) })).statusCode).toBe(201);
  });

  it('returns a generic 500 for unexpected failures, details only in the log', async () => {
    const broken = await openHarness();
    try {
      const projectId = await broken.createProject('p');
      await broken.local.repository.close();
      const res = await broken.request('GET', `/v1/projects/${projectId}/history`);
      const error = expectError(res, 500, 'INTERNAL');
      expect(error['message']).toBe('Internal error');
      expect(error['details']).toBeUndefined();
      const logged = broken.logs.map((l) => JSON.parse(l) as { level: number; requestId?: string; err?: { message: string } });
      const failure = logged.find((l) => l.level === 50 && l.requestId === res.headers['x-request-id']);
      expect(failure?.err?.message).toEqual(expect.any(String));
    } finally {
      await broken.dispose().catch(() => undefined);
    }
  });
});
