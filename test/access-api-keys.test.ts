import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatApiKey, hmacSecret, parseApiKey } from '../engine/access/api-key-format.js';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../engine/access/api-keys.js';
import { authenticateApiKey, LAST_USED_RESOLUTION_MS } from '../engine/access/authenticate.js';
import { bootstrapOrganization } from '../engine/access/bootstrap.js';
import type { Principal } from '../engine/access/context.js';
import type { AccessDeps } from '../engine/access/deps.js';
import { isStrataError, type StrataError } from '../engine/errors.js';
import { createIdGenerator } from '../engine/ids.js';
import { type LocalEngine, openLocalEngine } from '../engine/local.js';
import { type FrozenClock, frozenClock } from './helpers/clock.js';
import { tempDir } from './helpers/world.js';

const KEY_SHAPE = /^rk\.test\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/;

async function rejection(promise: Promise<unknown>): Promise<StrataError> {
  try {
    await promise;
  } catch (error) {
    if (isStrataError(error)) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

/** The part of a 401 a caller sees: must be identical for every kind of bad key. */
function visible(error: StrataError) {
  return { code: error.code, status: error.status, message: error.message, details: error.details };
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe('API keys (engine/access)', () => {
  let home: { path: string; cleanup: () => Promise<void> };
  let local: LocalEngine;
  let clock: FrozenClock;
  let deps: AccessDeps;
  let ownerKey: string;
  let owner: Principal;
  let orgId: string;

  beforeEach(async () => {
    home = await tempDir('strata-access-');
    clock = frozenClock();
    const ids = createIdGenerator(clock);
    local = await openLocalEngine({ home: home.path, clock, ids });
    deps = { repository: local.repository, clock, ids, pepper: randomBytes(32), environment: 'test' };
    const boot = await bootstrapOrganization(deps, { orgName: 'Lab' });
    ownerKey = boot.apiKey;
    orgId = boot.orgId;
    owner = await authenticateApiKey(deps, ownerKey);
  });

  afterEach(async () => {
    await local.close();
    await home.cleanup();
  });

  it('mints rk.<env>.<keyId>.<secret> and stores only HMAC-SHA256(pepper, secret)', async () => {
    expect(ownerKey).toMatch(KEY_SHAPE);
    const parsed = parseApiKey(ownerKey)!;
    expect(formatApiKey(parsed)).toBe(ownerKey);
    const record = (await local.repository.access.getApiKey(parsed.keyId))!;
    expect(record.secretHmac).toBe(hmacSecret(deps.pepper, parsed.secret));
    expect(record.secretHmac).not.toContain(parsed.secret);
    expect(owner).toMatchObject({ authKind: 'api-key', keyId: parsed.keyId, orgId, projectScope: null });
    // Nothing on disk (database, WAL, objects) holds the secret.
    await local.close();
    for (const file of await filesUnder(home.path)) {
      expect((await readFile(file)).includes(parsed.secret), file).toBe(false);
    }
    local = await openLocalEngine({ home: home.path, clock });
  });

  it('parses strictly', () => {
    const good = parseApiKey(ownerKey)!;
    const bad = [
      '',
      'rk',
      `RK.test.${good.keyId}.${good.secret}`,
      `rk.TEST.${good.keyId}.${good.secret}`,
      `rk.test.${good.keyId.toUpperCase()}.${good.secret}`,
      `rk.test.${good.keyId}.${good.secret}=`,
      `rk.test.${good.keyId}.${good.secret.slice(1)}`,
      `rk.test.${good.keyId}x.${good.secret}`,
      `rk..${good.keyId}.${good.secret}`,
      `rk.abcdefghijklmnopq.${good.keyId}.${good.secret}`,
      ` ${ownerKey}`,
      `${ownerKey}\n`,
      `${ownerKey}.x`,
      ownerKey.replace(/\./g, '_'),
      'x'.repeat(100_000),
    ];
    for (const value of bad) expect(parseApiKey(value), JSON.stringify(value.slice(0, 80))).toBeNull();
  });

  it('gives one identical UNAUTHENTICATED for every kind of bad key', async () => {
    const parsed = parseApiKey(ownerKey)!;
    const wrongSecret = formatApiKey({ ...parsed, secret: randomBytes(32).toString('base64url') });
    const unknownId = formatApiKey({ ...parsed, keyId: '0123456789abcdef' });
    const wrongEnvLabel = formatApiKey({ ...parsed, environment: 'prod' });
    const expiring = await createApiKey(deps, owner, { purpose: 'ci', expiresInDays: 1 });
    const revoked = await createApiKey(deps, owner, { purpose: 'old' });
    await revokeApiKey(deps, owner, revoked.key.keyId);
    // A key minted by another deployment (same database, other environment) does not authenticate here.
    const prodDeps: AccessDeps = { ...deps, environment: 'prod' };
    const prodKey = (await createApiKey(prodDeps, owner, { purpose: 'prod' })).apiKey;
    const removed = await createApiKey(deps, owner, { purpose: 'removed' });
    await local.repository.access.removeOrgMember(orgId, removed.key.identityId);
    clock.advance(86_400_000 + 1);

    const reference = visible(await rejection(authenticateApiKey(deps, 'garbage')));
    expect(reference).toEqual({ code: 'UNAUTHENTICATED', status: 401, message: 'Authentication required', details: undefined });
    for (const key of [wrongSecret, unknownId, wrongEnvLabel, expiring.apiKey, revoked.apiKey, prodKey, removed.apiKey, '']) {
      expect(visible(await rejection(authenticateApiKey(deps, key)))).toEqual(reference);
    }
    // the good key still works
    await expect(authenticateApiKey(deps, ownerKey)).resolves.toMatchObject({ keyId: parsed.keyId });
  });

  it('coalesces lastUsedAt to one write per minute', async () => {
    const { keyId } = parseApiKey(ownerKey)!;
    const t0 = new Date(clock.now()).toISOString();
    expect((await local.repository.access.getApiKey(keyId))!.lastUsedAt).toBe(t0);
    clock.advance(LAST_USED_RESOLUTION_MS - 1);
    await authenticateApiKey(deps, ownerKey);
    expect((await local.repository.access.getApiKey(keyId))!.lastUsedAt).toBe(t0);
    clock.advance(1);
    await authenticateApiKey(deps, ownerKey);
    expect((await local.repository.access.getApiKey(keyId))!.lastUsedAt).toBe(new Date(clock.now()).toISOString());
  });

  it('rotates a key once when two rotations race; the loser changes nothing', async () => {
    const ci = await createApiKey(deps, owner, { purpose: 'ci', role: 'member' });
    const before = (await local.repository.access.listApiKeys(orgId)).length;
    const results = await Promise.allSettled([rotateApiKey(deps, owner, ci.key.keyId), rotateApiKey(deps, owner, ci.key.keyId)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost.map((r) => (r.reason as { code?: string }).code)).toEqual(['KEY_ROTATED']);
    expect((await local.repository.access.listApiKeys(orgId)).length).toBe(before + 1);
    const rotations = (await local.repository.access.listAudit(orgId, { limit: 50 })).items.filter((r) => r.action === 'key.rotate');
    expect(rotations).toHaveLength(1);
  });

  it('rotates: the old key works until the grace ends, then only the new one', async () => {
    const ci = await createApiKey(deps, owner, { purpose: 'ci', role: 'member' });
    const rotated = await rotateApiKey(deps, owner, ci.key.keyId, { graceSeconds: 3600 });
    expect(rotated.apiKey).toMatch(KEY_SHAPE);
    expect(rotated.key).toMatchObject({ identityId: ci.key.identityId, projectId: null, role: 'member', status: 'active' });
    expect(rotated.replaced).toMatchObject({ keyId: ci.key.keyId, replacedBy: rotated.key.keyId, status: 'grace' });
    const oldPrincipal = await authenticateApiKey(deps, ci.apiKey);
    const newPrincipal = await authenticateApiKey(deps, rotated.apiKey);
    expect(newPrincipal.identity.identityId).toBe(oldPrincipal.identity.identityId);

    clock.advance(3600_000 - 1);
    await expect(authenticateApiKey(deps, ci.apiKey)).resolves.toBeTruthy();
    clock.advance(1);
    expect((await rejection(authenticateApiKey(deps, ci.apiKey))).code).toBe('UNAUTHENTICATED');
    await expect(authenticateApiKey(deps, rotated.apiKey)).resolves.toBeTruthy();

    expect((await rejection(rotateApiKey(deps, owner, ci.key.keyId))).code).toBe('KEY_ROTATED');
    await revokeApiKey(deps, owner, rotated.key.keyId);
    expect((await rejection(revokeApiKey(deps, owner, rotated.key.keyId))).code).toBe('KEY_REVOKED');
    expect((await rejection(rotateApiKey(deps, owner, rotated.key.keyId))).code).toBe('KEY_REVOKED');
    const statuses = Object.fromEntries((await listApiKeys(deps, owner, {})).map((k) => [k.keyId, k.status]));
    expect(statuses[ci.key.keyId]).toBe('rotated');
    expect(statuses[rotated.key.keyId]).toBe('revoked');
  });

  it('keeps the lifetime of a rotated key, counted from the rotation', async () => {
    const ci = await createApiKey(deps, owner, { purpose: 'ci', expiresInDays: 30, rotateInDays: 7 });
    clock.advance(5 * 86_400_000);
    const rotated = await rotateApiKey(deps, owner, ci.key.keyId, { graceSeconds: 0 });
    expect(Date.parse(rotated.key.expiresAt!) - clock.now()).toBe(30 * 86_400_000);
    expect(Date.parse(rotated.key.rotateBy!) - clock.now()).toBe(7 * 86_400_000);
    // grace 0: the old key stops at once
    expect((await rejection(authenticateApiKey(deps, ci.apiKey))).code).toBe('UNAUTHENTICATED');
  });

  it('audits create, rotate and revoke without any secret', async () => {
    const ci = await createApiKey(deps, owner, { purpose: 'ci' });
    const rotated = await rotateApiKey(deps, owner, ci.key.keyId);
    await revokeApiKey(deps, owner, rotated.key.keyId);
    const page = await local.repository.access.listAudit(orgId, { limit: 100 });
    const actions = page.items.map((r) => `${r.action}:${r.target}`);
    expect(actions).toEqual(
      expect.arrayContaining([`key.create:${ci.key.keyId}`, `key.rotate:${ci.key.keyId}`, `key.revoke:${rotated.key.keyId}`]),
    );
    for (const record of page.items.filter((r) => r.action.startsWith('key.'))) expect(record.actorId).toBe(owner.identity.identityId);
    const text = JSON.stringify(page.items);
    for (const key of [ownerKey, ci.apiKey, rotated.apiKey]) {
      const { secret } = parseApiKey(key)!;
      expect(text).not.toContain(secret);
      expect(text).not.toContain(hmacSecret(deps.pepper, secret));
    }
  });

  it('never gives a key a role above its creator, and copies the creator’s project narrowing', async () => {
    const member = await createApiKey(deps, owner, { purpose: 'member', role: 'member' });
    const memberPrincipal = await authenticateApiKey(deps, member.apiKey);
    const tooHigh = await rejection(createApiKey(deps, memberPrincipal, { purpose: 'x', role: 'admin' }));
    expect(tooHigh).toMatchObject({ code: 'FORBIDDEN', details: { field: 'role' } });
    // default role: member, capped at the creator's
    expect((await createApiKey(deps, memberPrincipal, { purpose: 'y' })).key.role).toBe('member');
    const viewer = await authenticateApiKey(deps, (await createApiKey(deps, owner, { purpose: 'v', role: 'viewer' })).apiKey);
    expect((await rejection(createApiKey(deps, viewer, { purpose: 'z', role: 'viewer' }))).code).toBe('FORBIDDEN');

    const project = await local.engine.createProject({ orgId, name: 'p' });
    await local.repository.access.setProjectAccess({ projectId: project.projectId, identityId: memberPrincipal.identity.identityId, access: 'read' });
    const derived = await createApiKey(deps, memberPrincipal, { purpose: 'derived', role: 'member' });
    expect(await local.repository.access.getProjectAccess(project.projectId, derived.key.identityId)).toBe('read');
  });

  it('scopes keys to a project: a scoped key mints only keys for that project', async () => {
    const p1 = await local.engine.createProject({ orgId, name: 'p1' });
    const p2 = await local.engine.createProject({ orgId, name: 'p2' });
    const scoped = await createApiKey(deps, owner, { purpose: 'ci', projectId: p1.projectId, role: 'member' });
    expect(scoped.key.projectId).toBe(p1.projectId);
    const principal = await authenticateApiKey(deps, scoped.apiKey);
    expect(principal.projectScope).toBe(p1.projectId);
    // inherits the scope when none is given
    expect((await createApiKey(deps, principal, { purpose: 'child' })).key.projectId).toBe(p1.projectId);
    expect((await rejection(createApiKey(deps, principal, { purpose: 'other', projectId: p2.projectId }))).code).toBe('PROJECT_NOT_FOUND');
    // it sees (and may rotate) only keys it owns or is
    const visibleKeys = await listApiKeys(deps, principal, {});
    expect(visibleKeys.every((k) => k.ownerId === principal.identity.identityId || k.identityId === principal.identity.identityId)).toBe(true);
    expect((await rejection(revokeApiKey(deps, principal, parseApiKey(ownerKey)!.keyId))).code).toBe('KEY_NOT_FOUND');
  });
});
