// fsck and gc through the API on a deployment with two organizations (issue 13, item 11): the content
// store is shared and deduplicated, so an organization's fsck checks and reports only what its own
// projects reference, and gc — which deletes content that belongs to nobody — is the operator's, not
// an organization's. On a single-organization deployment (a workstation's daemon) both act on the whole
// store, as before.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintApiKey } from '../engine/access/api-keys.js';
import type { FsckReport } from '../engine/engine-api.js';
import { type Harness, openHarness } from './control-api-harness.js';

let h: Harness;
let labProject: string;

beforeAll(async () => {
  h = await openHarness();
  labProject = await h.createProject('lab data');
  await h.ok('PUT', `/v1/projects/${labProject}/fs/write?path=lab.txt`, { status: 201 });
});

afterAll(async () => {
  await h.dispose();
});

/** A second organization with its owner key, made the way bootstrap makes the first. */
async function secondOrganization(): Promise<{ orgId: string; apiKey: string }> {
  const { access, clock } = h;
  const orgId = access.ids.uuid();
  const identityId = access.ids.uuid();
  const createdAt = new Date(clock.now()).toISOString();
  const { apiKey, record } = mintApiKey(access, { orgId, identityId, projectId: null, ownerId: identityId, purpose: 'rival owner', expiresAt: null, rotateBy: null });
  await access.repository.access.applyAccessChanges([
    { kind: 'createOrganization', org: { orgId, name: 'rival', createdAt } },
    { kind: 'createIdentity', identity: { identityId, kind: 'service', name: 'rival owner', email: null, createdAt } },
    { kind: 'setOrgRole', membership: { orgId, identityId, role: 'owner' } },
    { kind: 'createApiKey', key: record },
  ]);
  return { orgId, apiKey };
}

describe('fsck and gc through the API', () => {
  it('act on the whole store while the deployment has one organization', async () => {
    const fsck = await h.ok<FsckReport>('POST', '/v1/admin/fsck', { body: {} });
    expect(fsck).toMatchObject({ scope: 'store', ok: true, referencesChecked: 1, objectsChecked: 1 });
    const gc = await h.ok('POST', '/v1/admin/gc', { body: {} });
    expect(gc).toMatchObject({ objectsScanned: 1, objectsDeleted: 0 });
  });

  it("with two organizations: each one's fsck sees only its own references; gc is refused to both", async () => {
    const rival = await secondOrganization();
    const rivalProject = await h.createProject('rival data', rival.apiKey);
    for (let i = 0; i < 5; i++) {
      await h.ok('PUT', `/v1/projects/${rivalProject}/fs/write?path=secret-${i}.txt`, { key: rival.apiKey, body: `rival secret ${i}`, status: 201 });
    }
    // Content both organizations stored: deduplicated in the store, and each one's to check.
    await h.ok('PUT', `/v1/projects/${rivalProject}/fs/write?path=shared.txt`, { key: rival.apiKey, body: 'common', status: 201 });
    await h.ok('PUT', `/v1/projects/${labProject}/fs/write?path=shared.txt`, { body: 'common', status: 201 });
    // An object the rival's project references is damaged: only the rival hears of it.
    const secret = await h.ok<{ contentHash: string }>('GET', `/v1/projects/${rivalProject}/fs/stat?path=secret-0.txt`, { key: rival.apiKey });
    await h.local.store.delete(secret.contentHash as `blake3:${string}`);

    const lab = await h.ok<FsckReport>('POST', '/v1/admin/fsck', { body: {} });
    expect(lab).toMatchObject({ scope: 'projects', ok: true, referencesChecked: 2, objectsChecked: 2, missing: [], corrupt: [] });

    const theirs = await h.ok<FsckReport>('POST', '/v1/admin/fsck', { key: rival.apiKey, body: {} });
    expect(theirs).toMatchObject({ scope: 'projects', ok: false, referencesChecked: 6, objectsChecked: 5 });
    expect(theirs.missing).toStrictEqual([{ hash: secret.contentHash }]);

    for (const key of [h.ownerKey, rival.apiKey]) {
      const gc = await h.request('POST', '/v1/admin/gc', { key, body: {} });
      expect(gc.statusCode).toBe(403);
      expect(gc.json().error.code).toBe('FORBIDDEN');
      // Both forms the operator may need: a Postgres + S3 server's storage is named by its config.
      expect(gc.json().error.message).toContain('`strata gc --config FILE`');
      expect(gc.json().error.message).toContain('`strata gc --home DIR`');
    }
    // In-process, on the home, the operator still checks the whole store.
    const store = await h.local.engine.fsck();
    expect(store).toMatchObject({ scope: 'store', ok: false, referencesChecked: 7, objectsChecked: 6 });
  });
});
