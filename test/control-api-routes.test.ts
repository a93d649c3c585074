import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';

// Happy path of every route, in the order a user would meet them.

interface Version {
  versionId: string;
  path: string;
  contentHash: string | null;
  size: number;
  kind: string;
  restoredFrom: string | null;
}

describe('control API routes', () => {
  let h: Harness;
  let pid: string;
  const base = () => `/v1/projects/${pid}`;

  beforeAll(async () => {
    h = await openHarness();
    pid = await h.createProject('thesis');
  });
  afterAll(async () => {
    await h.dispose();
  });

  it('serves health and the OpenAPI document without credentials', async () => {
    expect(await h.ok('GET', '/healthz', { key: null as never })).toEqual({ ok: true });
    const doc = await h.ok<{ openapi: string; paths: Record<string, Record<string, unknown>> }>('GET', '/openapi.json', { key: null as never });
    expect(doc.openapi).toBe('3.1.0');
    const expected = [
      'post /v1/projects',
      'get /v1/projects',
      'get /v1/projects/{projectId}',
      'get /v1/projects/{projectId}/policy',
      'put /v1/projects/{projectId}/policy',
      'put /v1/projects/{projectId}/fs/write',
      'get /v1/projects/{projectId}/fs/read',
      'get /v1/projects/{projectId}/fs/stat',
      'post /v1/projects/{projectId}/fs/delete',
      'get /v1/projects/{projectId}/fs/dir',
      'post /v1/projects/{projectId}/fs/rename',
      'get /v1/projects/{projectId}/history',
      'get /v1/projects/{projectId}/history/{versionId}',
      'get /v1/projects/{projectId}/history/diff',
      'get /v1/projects/{projectId}/history/{versionId}/rename',
      'post /v1/projects/{projectId}/history/restore',
      'post /v1/projects/{projectId}/sync/objects/missing',
      'post /v1/projects/{projectId}/sync/objects/read',
      'post /v1/projects/{projectId}/sync/versions',
      'get /v1/projects/{projectId}/sync/objects/{hash}',
      'post /v1/projects/{projectId}/sync/snapshots',
      'get /v1/projects/{projectId}/sync/snapshots',
      'get /v1/projects/{projectId}/sync/changes',
      'put /v1/projects/{projectId}/sync/objects/{hash}',
      'put /v1/projects/{projectId}/sync/datasets/{manifestHash}',
      'post /v1/projects/{projectId}/sync/objects/compose',
      'post /v1/projects/{projectId}/sync/objects',
      'post /v1/projects/{projectId}/fs/snapshots',
      'get /v1/projects/{projectId}/fs/snapshots',
      'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}',
      'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}/entries',
      'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}/diff',
      'post /v1/projects/{projectId}/fs/snapshots/{snapshotId}/restore',
      'post /v1/projects/{projectId}/fs/snapshots/{snapshotId}/tags',
      'get /v1/projects/{projectId}/fs/tags',
      'delete /v1/projects/{projectId}/fs/tags/{tag}',
      'get /v1/projects/{projectId}/fs/retention',
      'post /v1/projects/{projectId}/fs/retention',
      'get /v1/projects/{projectId}/fs/datasets',
      'post /v1/projects/{projectId}/fs/datasets/track',
      'post /v1/projects/{projectId}/fs/datasets/untrack',
      'post /v1/projects/{projectId}/fs/datasets/threshold',
      'get /v1/projects/{projectId}/fs/dataset/manifest',
      'get /v1/projects/{projectId}/fs/dataset/history',
      'get /v1/projects/{projectId}/fs/snapshots/{snapshotId}/git-export',
      'get /v1/projects/{projectId}/fs/git/refs',
      'get /v1/projects/{projectId}/fs/git/upload',
      'post /v1/projects/{projectId}/fs/git/receive',
      'get /v1/projects/{projectId}/members',
      'put /v1/projects/{projectId}/members/{identityId}',
      'delete /v1/projects/{projectId}/members/{identityId}',
      'get /auth/me',
      'patch /auth/me/preferences',
      'post /auth/resolve',
      'get /auth/web/callback',
      'post /auth/web/logout',
      'post /v1/orgs/{orgId}/sso',
      'get /v1/orgs/{orgId}/sso',
      'get /v1/orgs/{orgId}/sso/{connectionId}',
      'post /v1/orgs/{orgId}/sso/{connectionId}/domains/{domain}/verify',
      'post /v1/orgs/{orgId}/sso/{connectionId}/test',
      'post /v1/orgs/{orgId}/sso/{connectionId}/activate',
      'post /v1/orgs/{orgId}/sso/{connectionId}/deactivate',
      'get /v1/orgs/{orgId}/sso-diagnosis',
      'delete /scim/v2/Groups/{id}',
      'delete /scim/v2/Users/{id}',
      'get /scim/v2/Groups',
      'get /scim/v2/Groups/{id}',
      'get /scim/v2/ResourceTypes',
      'get /scim/v2/Schemas',
      'get /scim/v2/ServiceProviderConfig',
      'get /scim/v2/Users',
      'get /scim/v2/Users/{id}',
      'get /v1/orgs/{orgId}/scim',
      'patch /scim/v2/Groups/{id}',
      'patch /scim/v2/Users/{id}',
      'post /scim/v2/Groups',
      'post /scim/v2/Users',
      'post /v1/orgs/{orgId}/scim/token',
      'put /scim/v2/Groups/{id}',
      'put /scim/v2/Users/{id}',
      'put /v1/orgs/{orgId}/scim/roles',
      'get /v1/orgs',
      'post /v1/orgs/{orgId}/identities',
      'get /v1/orgs/{orgId}/members',
      'put /v1/orgs/{orgId}/members/{identityId}',
      'delete /v1/orgs/{orgId}/members/{identityId}',
      'get /v1/orgs/{orgId}/audit',
      'post /v1/keys',
      'get /v1/keys',
      'post /v1/keys/{keyId}/rotate',
      'post /v1/keys/{keyId}/revoke',
      'post /v1/admin/gc',
      'post /v1/admin/fsck',
      'get /healthz',
      'get /openapi.json',
      'get /',
      'get /ui/',
      'get /ui/{name}',
      'post /v1/ui/links',
      'get /ui/open',
    ];
    const actual = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(actual.sort()).toEqual(expected.sort());
    const write = doc.paths['/v1/projects/{projectId}/fs/write']!['put'] as { parameters: Array<{ name: string; in: string; required: boolean }> };
    expect(write.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'projectId', in: 'path', required: true }),
        expect.objectContaining({ name: 'path', in: 'query', required: true }),
        expect.objectContaining({ name: 'baseVersionId', in: 'query', required: false }),
      ]),
    );
    const retention = doc.paths['/v1/projects/{projectId}/fs/retention']!['post'] as { requestBody: { content: Record<string, { schema: unknown }> } };
    expect(retention.requestBody.content['application/json']!.schema).toMatchObject({
      additionalProperties: false,
      required: ['maxVersions'],
      properties: { maxVersions: { type: 'integer', minimum: 0 } },
    });
  });

  it('creates, lists and reads projects and their policy', async () => {
    const project = await h.ok<{ projectId: string; orgId: string; name: string }>('GET', base());
    expect(project).toMatchObject({ projectId: pid, orgId: h.orgId, name: 'thesis', retention: { maxVersions: 0 } });
    const list = await h.ok<{ items: Array<{ projectId: string }> }>('GET', '/v1/projects');
    expect(list.items.map((p) => p.projectId)).toContain(pid);
    expect((await h.ok<{ items: unknown[] }>('GET', `/v1/projects?orgId=${h.orgId}`)).items).toHaveLength(list.items.length);
    const policy = await h.ok<{ sizeThreshold: number; alwaysExtensions: string[] }>('GET', `${base()}/policy`);
    expect(policy.alwaysExtensions).toContain('.m');
    const updated = await h.ok<{ policy: { largeFileAllowlist: string[] } }>('PUT', `${base()}/policy`, { body: { largeFileAllowlist: ['.h5'] } });
    expect(updated.policy.largeFileAllowlist).toEqual(['.h5']);
  });

  it('writes, reads (whole, ranged, by version, conditional), stats, lists, renames and deletes files', async () => {
    const first = await h.ok<{ entry: { versionId: string }; version: Version }>('PUT', `${base()}/fs/write?path=src/main.m`, {
      body: 'disp(1)\n',
      status: 201,
    });
    expect(first.version).toMatchObject({ path: 'src/main.m', size: 8, kind: 'write' });
    const second = await h.request('PUT', `${base()}/fs/write?path=src/main.m&baseVersionId=${first.version.versionId}`, {
      payload: Buffer.from('disp(2)\n'),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(second.statusCode).toBe(201);
    const v2 = second.json().version as Version;

    const read = await h.request('GET', `${base()}/fs/read?path=src/main.m`);
    expect(read.statusCode).toBe(200);
    expect(read.body).toBe('disp(2)\n');
    expect(read.headers).toMatchObject({
      'content-type': 'application/octet-stream',
      'content-length': '8',
      etag: `"${v2.contentHash}"`,
      'x-strata-version-id': v2.versionId,
      'x-strata-content-hash': v2.contentHash,
      'accept-ranges': 'bytes',
    });
    const ranged = await h.request('GET', `${base()}/fs/read?path=src/main.m`, { headers: { range: 'bytes=5-6' } });
    expect(ranged.statusCode).toBe(206);
    expect(ranged.body).toBe('2)');
    expect(ranged.headers['content-range']).toBe('bytes 5-6/8');
    const suffix = await h.request('GET', `${base()}/fs/read?path=src/main.m`, { headers: { range: 'bytes=-3' } });
    expect([suffix.statusCode, suffix.body]).toEqual([206, '2)\n']);
    const open = await h.request('GET', `${base()}/fs/read?path=src/main.m`, { headers: { range: 'bytes=6-' } });
    expect([open.statusCode, open.body, open.headers['content-range']]).toEqual([206, ')\n', 'bytes 6-7/8']);
    const old = await h.request('GET', `${base()}/fs/read?versionId=${first.version.versionId}`);
    expect([old.statusCode, old.body]).toEqual([200, 'disp(1)\n']);
    const head = await h.request('HEAD', `${base()}/fs/read?path=src/main.m`);
    expect([head.statusCode, head.body, head.headers['content-length'], head.headers['x-strata-version-id']]).toEqual([200, '', '8', v2.versionId]);
    const notModified = await h.request('GET', `${base()}/fs/read?path=src/main.m`, { headers: { 'if-none-match': `"${v2.contentHash}"` } });
    expect([notModified.statusCode, notModified.body]).toEqual([304, '']);

    expect(await h.ok('GET', `${base()}/fs/stat?path=src/main.m`)).toMatchObject({ path: 'src/main.m', versionId: v2.versionId, size: 8 });
    const root = await h.ok<{ path: string; items: Array<{ name: string; type: string }> }>('GET', `${base()}/fs/dir`);
    expect(root).toMatchObject({ path: '', items: [{ name: 'src', type: 'directory' }] });
    const src = await h.ok<{ items: Array<{ name: string; type: string; size: number }> }>('GET', `${base()}/fs/dir?path=src`);
    expect(src.items).toEqual([expect.objectContaining({ name: 'main.m', type: 'file', size: 8 })]);

    const renamed = await h.ok<{ deleted: Version; created: { version: Version } }>('POST', `${base()}/fs/rename`, {
      body: { from: 'src/main.m', to: 'src/run.m' },
    });
    expect(renamed.deleted).toMatchObject({ path: 'src/main.m', contentHash: null, kind: 'delete' });
    expect(renamed.created.version).toMatchObject({ path: 'src/run.m', contentHash: v2.contentHash });
    const deleted = await h.ok<{ version: Version }>('POST', `${base()}/fs/delete`, {
      body: { path: 'src/run.m', baseVersionId: renamed.created.version.versionId },
    });
    expect(deleted.version).toMatchObject({ path: 'src/run.m', contentHash: null, kind: 'delete' });
    expect((await h.request('GET', `${base()}/fs/stat?path=src/run.m`)).json().error.code).toBe('PATH_NOT_FOUND');
  });

  it('lists history (paginated), gets a version and restores it', async () => {
    await h.ok('PUT', `${base()}/fs/write?path=notes.md`, { body: 'v1', status: 201 });
    await h.ok('PUT', `${base()}/fs/write?path=notes.md`, { body: 'v2', status: 201 });
    const all = await h.ok<{ items: Version[] }>('GET', `${base()}/history?path=notes.md`);
    expect(all.items.map((v) => v.size)).toEqual([2, 2]);
    const page1 = await h.ok<{ items: Version[]; nextCursor: string }>('GET', `${base()}/history?path=notes.md&limit=1`);
    expect(page1.items).toHaveLength(1);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = await h.ok<{ items: Version[]; nextCursor?: string }>(
      'GET',
      `${base()}/history?path=notes.md&limit=1&cursor=${encodeURIComponent(page1.nextCursor)}`,
    );
    expect(page2.items[0]!.versionId).toBe(all.items[1]!.versionId);
    expect(page2.nextCursor).toBeUndefined();
    const oldest = all.items[1]!;
    expect(await h.ok('GET', `${base()}/history/${oldest.versionId}`)).toEqual(oldest);
    const whole = await h.ok<{ items: Version[] }>('GET', `${base()}/history`);
    expect(whole.items.length).toBeGreaterThan(2);

    const restored = await h.ok<{ entry: { versionId: string }; version: Version }>('POST', `${base()}/history/restore`, {
      body: { versionId: oldest.versionId },
      status: 201,
    });
    expect(restored.version).toMatchObject({ path: 'notes.md', kind: 'restore', restoredFrom: oldest.versionId, contentHash: oldest.contentHash });
    expect((await h.request('GET', `${base()}/fs/read?path=notes.md`)).body).toBe('v1');
  });

  it('takes, lists, inspects, diffs, tags and restores snapshots', async () => {
    const s1 = await h.ok<{ snapshotId: string; seq: number; fileCount: number; message: string }>('POST', `${base()}/fs/snapshots`, {
      body: { message: 'first draft' },
      status: 201,
    });
    expect(s1).toMatchObject({ message: 'first draft', fileCount: 1 });
    await h.ok('PUT', `${base()}/fs/write?path=notes.md`, { body: 'v3', status: 201 });
    await h.ok('PUT', `${base()}/fs/write?path=data.json`, { body: '{}', status: 201 });
    // no body at all is fine for an optional body
    const s2 = await h.ok<{ snapshotId: string; parentId: string; seq: number }>('POST', `${base()}/fs/snapshots`, { status: 201 });
    expect(s2).toMatchObject({ parentId: s1.snapshotId, seq: s1.seq + 1 });

    const list = await h.ok<{ items: Array<{ snapshotId: string }> }>('GET', `${base()}/fs/snapshots`);
    expect(list.items.map((s) => s.snapshotId)).toEqual([s2.snapshotId, s1.snapshotId]);
    expect(await h.ok('GET', `${base()}/fs/snapshots/${s1.snapshotId}`)).toMatchObject({ snapshotId: s1.snapshotId });
    const entries = await h.ok<{ items: Array<{ path: string }> }>('GET', `${base()}/fs/snapshots/${s2.snapshotId}/entries`);
    expect(entries.items.map((e) => e.path)).toEqual(['data.json', 'notes.md']);

    expect(await h.ok('POST', `${base()}/fs/snapshots/${s1.snapshotId}/tags`, { body: { tag: 'v1.0' }, status: 201 })).toEqual({
      tag: 'v1.0',
      snapshotId: s1.snapshotId,
    });
    expect(await h.ok('GET', `${base()}/fs/tags`)).toEqual({ items: [{ tag: 'v1.0', snapshotId: s1.snapshotId }] });
    // a tag works wherever a snapshot id does
    expect(await h.ok('GET', `${base()}/fs/snapshots/v1.0`)).toMatchObject({ snapshotId: s1.snapshotId, tags: ['v1.0'] });
    const diff = await h.ok<{ from: string; to: string | null; items: Array<{ path: string; change: string }> }>(
      'GET',
      `${base()}/fs/snapshots/v1.0/diff?to=${s2.snapshotId}`,
    );
    expect(diff).toMatchObject({ from: s1.snapshotId, to: s2.snapshotId });
    expect(diff.items.map((i) => [i.path, i.change])).toEqual([
      ['data.json', 'added'],
      ['notes.md', 'modified'],
    ]);
    const toCurrent = await h.ok<{ to: null; items: unknown[] }>('GET', `${base()}/fs/snapshots/${s2.snapshotId}/diff`);
    expect(toCurrent).toEqual({ from: s2.snapshotId, to: null, items: [] });

    const restored = await h.ok<{ snapshot: { snapshotId: string }; changed: number; versions: Version[] }>(
      'POST',
      `${base()}/fs/snapshots/v1.0/restore`,
    );
    expect(restored.snapshot.snapshotId).toBe(s1.snapshotId);
    expect(restored.changed).toBe(2);
    expect(restored.versions.map((v) => v.kind)).toEqual(['snapshot-restore', 'snapshot-restore']);
    expect((await h.request('GET', `${base()}/fs/read?path=notes.md`)).body).toBe('v1');

    expect((await h.request('DELETE', `${base()}/fs/tags/v1.0`)).statusCode).toBe(204);
    expect(await h.ok('GET', `${base()}/fs/tags`)).toEqual({ items: [] });
  });

  it('gets and sets retention', async () => {
    expect(await h.ok('GET', `${base()}/fs/retention`)).toEqual({ projectId: pid, maxVersions: 0 });
    expect(await h.ok('POST', `${base()}/fs/retention`, { body: { maxVersions: 5 } })).toStrictEqual({ projectId: pid, maxVersions: 5, pruned: { versions: 0, bytes: 0 } });
    expect(await h.ok('GET', `${base()}/fs/retention`)).toEqual({ projectId: pid, maxVersions: 5 });
  });

  it('manages organizations, identities, members and project memberships, with an audit log', async () => {
    expect(await h.ok('GET', '/v1/orgs')).toEqual({ items: [{ orgId: h.orgId, name: 'Lab', role: 'owner' }] });
    const me = await h.ok<{ identity: { identityId: string }; organizations: unknown[]; projectScope: null }>('GET', '/auth/me');
    expect(me).toMatchObject({ identity: { identityId: h.ownerId }, authKind: 'api-key', projectScope: null });

    const created = await h.ok<{ identity: { identityId: string; email: string }; membership: { role: string } }>(
      'POST',
      `/v1/orgs/${h.orgId}/identities`,
      { body: { kind: 'user', name: 'Ada', email: 'ada@example.org', role: 'viewer' }, status: 201 },
    );
    expect(created).toMatchObject({ identity: { kind: 'user', name: 'Ada', email: 'ada@example.org' }, membership: { role: 'viewer' } });
    const ada = created.identity.identityId;
    const members = await h.ok<{ items: Array<{ identityId: string; role: string }> }>('GET', `/v1/orgs/${h.orgId}/members`);
    expect(members.items).toEqual(expect.arrayContaining([expect.objectContaining({ identityId: ada, role: 'viewer' })]));
    expect(await h.ok('PUT', `/v1/orgs/${h.orgId}/members/${ada}`, { body: { role: 'member' } })).toEqual({
      orgId: h.orgId,
      identityId: ada,
      role: 'member',
    });

    expect(await h.ok('PUT', `${base()}/members/${ada}`, { body: { access: 'read' } })).toEqual({ projectId: pid, identityId: ada, access: 'read' });
    expect(await h.ok('GET', `${base()}/members`)).toEqual({ items: [{ projectId: pid, identityId: ada, access: 'read' }] });
    expect((await h.request('DELETE', `${base()}/members/${ada}`)).statusCode).toBe(204);
    expect(await h.ok('GET', `${base()}/members`)).toEqual({ items: [] });
    expect((await h.request('DELETE', `/v1/orgs/${h.orgId}/members/${ada}`)).statusCode).toBe(204);

    const audit = await h.ok<{ items: Array<{ action: string; target: string }> }>('GET', `/v1/orgs/${h.orgId}/audit?limit=1000`);
    const actions = audit.items.filter((r) => r.target === ada).map((r) => r.action);
    expect(actions).toEqual(
      expect.arrayContaining(['identity.create', 'org.role.set', 'project.access.set', 'project.access.remove', 'org.member.remove']),
    );
    expect(audit.items.map((r) => r.action)).toEqual(expect.arrayContaining(['org.create', 'project.create', 'retention.set']));
    const page = await h.ok<{ items: unknown[]; nextCursor: string }>('GET', `/v1/orgs/${h.orgId}/audit?limit=2`);
    expect(page.items).toHaveLength(2);
    expect(page.nextCursor).toEqual(expect.any(String));
  });

  it('creates, lists, rotates and revokes API keys (secrets shown once, never listed)', async () => {
    const created = await h.ok<{ apiKey: string; key: { keyId: string; projectId: string; role: string; status: string } }>('POST', '/v1/keys', {
      body: { purpose: 'CI for thesis', projectId: pid, role: 'member', expiresInDays: 90, rotateInDays: 30 },
      status: 201,
    });
    expect(created.apiKey).toMatch(/^rk\.test\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    expect(created.key).toMatchObject({ projectId: pid, role: 'member', status: 'active', purpose: 'CI for thesis', ownerId: h.ownerId });
    expect(created.key).not.toHaveProperty('secretHmac');
    // the new key works, and sees only its project
    const scoped = await h.ok<{ items: Array<{ projectId: string }> }>('GET', '/v1/projects', { key: created.apiKey });
    expect(scoped.items.map((p) => p.projectId)).toEqual([pid]);

    const listed = await h.request('GET', '/v1/keys');
    expect(listed.statusCode).toBe(200);
    const secret = created.apiKey.split('.')[3]!;
    expect(listed.body).not.toContain(secret);
    expect(listed.body).not.toContain('secretHmac');
    expect(listed.json().items.map((k: { keyId: string }) => k.keyId)).toContain(created.key.keyId);

    const rotated = await h.ok<{ apiKey: string; key: { keyId: string }; replaced: { status: string; graceUntil: string } }>(
      'POST',
      `/v1/keys/${created.key.keyId}/rotate`,
      { body: { graceSeconds: 60 }, status: 201 },
    );
    expect(rotated.replaced).toMatchObject({ status: 'grace', graceUntil: new Date(h.clock.now() + 60_000).toISOString() });
    const revoked = await h.ok<{ status: string; revokedAt: string }>('POST', `/v1/keys/${rotated.key.keyId}/revoke`);
    expect(revoked).toMatchObject({ status: 'revoked', revokedAt: new Date(h.clock.now()).toISOString() });
    expect((await h.request('GET', '/v1/projects', { key: rotated.apiKey })).statusCode).toBe(401);
  });

  it('runs gc and fsck for an org admin', async () => {
    expect(await h.ok('POST', '/v1/admin/gc')).toEqual({
      objectsScanned: expect.any(Number),
      objectsDeleted: expect.any(Number),
      bytesFreed: expect.any(Number),
      objectsKept: expect.any(Number),
      bytesKept: expect.any(Number),
      graceMs: expect.any(Number),
    });
    expect(await h.ok('POST', '/v1/admin/fsck')).toMatchObject({ ok: true, missing: [], corrupt: [] });
  });
});
