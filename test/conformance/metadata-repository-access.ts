import { describe, expect, it } from 'vitest';
import type { ApiKeyRecord, AuditRecord, Identity, Project } from '../../engine/types.js';
import {
  at,
  collectAll,
  expectStrataError,
  ORG,
  OTHER_PROJECT,
  PROJECT,
  type RepositoryGetter,
  uuidFor,
} from './metadata-repository-fixtures.js';

const OTHER_ORG = uuidFor(2, 0xb);

function project(projectId: string, name: string, orgId = ORG): Project {
  return {
    projectId,
    orgId,
    name,
    createdAt: at(1),
    policy: { alwaysExtensions: ['.m', '.py'], sizeThreshold: 52_428_800, largeFileAllowlist: ['.h5'] },
    retention: { maxVersions: 0 },
    datasets: { tracked: [], thresholdBytes: 67_108_864 },
  };
}

function apiKey(n: number, orgId = ORG): ApiKeyRecord {
  return {
    keyId: uuidFor(n, 0xe),
    environment: 'live',
    secretHmac: `hmac-${n}`,
    identityId: uuidFor(n, 0xd),
    orgId,
    projectId: n % 2 === 0 ? PROJECT : null,
    ownerId: uuidFor(1, 0xc),
    purpose: `ci job ${n}`,
    createdAt: at(n),
    expiresAt: at(100_000),
    rotateBy: null,
    revokedAt: null,
    lastUsedAt: null,
    replacedBy: null,
    graceUntil: null,
    roleCap: n % 3 === 0 ? 'viewer' : null,
  };
}

export function projectConformance(repo: RepositoryGetter): void {
  describe('projects', () => {
    it('creates, lists by name and updates projects', async () => {
      await repo().projects.create(project(PROJECT, 'zeta'));
      await repo().projects.create(project(OTHER_PROJECT, 'alpha'));
      await repo().projects.create(project(uuidFor(3, 0xa), 'elsewhere', OTHER_ORG));
      expect(await repo().projects.get(PROJECT)).toStrictEqual(project(PROJECT, 'zeta'));
      expect(await repo().projects.get(uuidFor(404))).toBeNull();
      expect((await repo().projects.list(ORG)).map((p) => p.name)).toStrictEqual(['alpha', 'zeta']);

      const policy = { alwaysExtensions: ['.rs'], sizeThreshold: 1, largeFileAllowlist: [] };
      const updated = await repo().projects.update(PROJECT, { retention: { maxVersions: 5 }, policy });
      const expected = { ...project(PROJECT, 'zeta'), retention: { maxVersions: 5 }, policy };
      expect(updated).toStrictEqual(expected);
      expect(await repo().projects.get(PROJECT)).toStrictEqual(expected);
      expect(await repo().projects.update(PROJECT, { name: 'eta' })).toStrictEqual({ ...expected, name: 'eta' });
      await expectStrataError(repo().projects.update(uuidFor(404), { name: 'x' }), 'PROJECT_NOT_FOUND');
    });
  });
}

export function accessConformance(repo: RepositoryGetter): void {
  describe('access', () => {
    it('stores organizations and identities exactly', async () => {
      await repo().access.createOrganization({ orgId: ORG, name: 'Lab', createdAt: at(0) });
      await repo().access.createOrganization({ orgId: OTHER_ORG, name: 'Another lab', createdAt: at(1) });
      expect(await repo().access.getOrganization(ORG)).toStrictEqual({ orgId: ORG, name: 'Lab', createdAt: at(0) });
      expect(await repo().access.getOrganization(uuidFor(404))).toBeNull();
      expect((await repo().access.listOrganizations()).map((o) => o.orgId).sort()).toStrictEqual([ORG, OTHER_ORG].sort());

      const user: Identity = { identityId: uuidFor(1, 0xd), kind: 'user', name: 'Ada', email: 'ada@example.org', createdAt: at(2) };
      const service: Identity = { identityId: uuidFor(2, 0xd), kind: 'service', name: 'ci', email: null, createdAt: at(3) };
      await repo().access.createIdentity(user);
      await repo().access.createIdentity(service);
      expect(await repo().access.getIdentity(user.identityId)).toStrictEqual(user);
      expect(await repo().access.getIdentity(service.identityId)).toStrictEqual(service);
      expect(await repo().access.getIdentity(uuidFor(404))).toBeNull();
    });

    it('upserts and removes org roles and project access', async () => {
      const [a, b] = [uuidFor(1, 0xd), uuidFor(2, 0xd)];
      await repo().access.setOrgRole({ orgId: ORG, identityId: b, role: 'viewer' });
      await repo().access.setOrgRole({ orgId: ORG, identityId: a, role: 'member' });
      await repo().access.setOrgRole({ orgId: ORG, identityId: a, role: 'owner' });
      await repo().access.setOrgRole({ orgId: OTHER_ORG, identityId: a, role: 'admin' });
      expect(await repo().access.getOrgRole(ORG, a)).toBe('owner');
      expect(await repo().access.getOrgRole(ORG, uuidFor(404))).toBeNull();
      expect(await repo().access.listOrgMembers(ORG)).toStrictEqual([
        { orgId: ORG, identityId: a, role: 'owner' },
        { orgId: ORG, identityId: b, role: 'viewer' },
      ]);
      expect((await repo().access.listOrgsOf(a)).sort((x, y) => (x.orgId < y.orgId ? -1 : 1))).toStrictEqual(
        [
          { orgId: ORG, identityId: a, role: 'owner' },
          { orgId: OTHER_ORG, identityId: a, role: 'admin' },
        ].sort((x, y) => (x.orgId < y.orgId ? -1 : 1)),
      );
      await repo().access.removeOrgMember(ORG, a);
      expect(await repo().access.getOrgRole(ORG, a)).toBeNull();
      expect(await repo().access.listOrgMembers(ORG)).toStrictEqual([{ orgId: ORG, identityId: b, role: 'viewer' }]);

      await repo().access.setProjectAccess({ projectId: PROJECT, identityId: a, access: 'read' });
      await repo().access.setProjectAccess({ projectId: PROJECT, identityId: a, access: 'write' });
      await repo().access.setProjectAccess({ projectId: PROJECT, identityId: b, access: 'read' });
      expect(await repo().access.getProjectAccess(PROJECT, a)).toBe('write');
      expect(await repo().access.getProjectAccess(OTHER_PROJECT, a)).toBeNull();
      expect(await repo().access.listProjectMembers(PROJECT)).toStrictEqual([
        { projectId: PROJECT, identityId: a, access: 'write' },
        { projectId: PROJECT, identityId: b, access: 'read' },
      ]);
      await repo().access.setProjectAccess({ projectId: OTHER_PROJECT, identityId: a, access: 'read' });
      expect(await repo().access.listProjectMembershipsOf(a)).toStrictEqual(
        [
          { projectId: PROJECT, identityId: a, access: 'write' },
          { projectId: OTHER_PROJECT, identityId: a, access: 'read' },
        ].sort((x, y) => (x.projectId < y.projectId ? -1 : 1)),
      );
      await repo().access.removeProjectMember(OTHER_PROJECT, a);
      await repo().access.removeProjectMember(PROJECT, b);
      expect(await repo().access.listProjectMembershipsOf(b)).toStrictEqual([]);
      expect(await repo().access.getProjectAccess(PROJECT, b)).toBeNull();
      expect(await repo().access.listProjectMembers(OTHER_PROJECT)).toStrictEqual([]);
    });

    it('stores, patches and touches API keys', async () => {
      await repo().access.createApiKey(apiKey(1));
      await repo().access.createApiKey(apiKey(2));
      await repo().access.createApiKey(apiKey(3, OTHER_ORG));
      expect(await repo().access.getApiKey(apiKey(2).keyId)).toStrictEqual(apiKey(2));
      expect(await repo().access.getApiKey(uuidFor(404))).toBeNull();
      expect(await repo().access.listApiKeys(ORG)).toStrictEqual([apiKey(1), apiKey(2)]);

      await repo().access.updateApiKey(apiKey(1).keyId, { revokedAt: at(50), replacedBy: apiKey(2).keyId, graceUntil: at(60) });
      const revoked = { ...apiKey(1), revokedAt: at(50), replacedBy: apiKey(2).keyId, graceUntil: at(60) };
      expect(await repo().access.getApiKey(apiKey(1).keyId)).toStrictEqual(revoked);
      await repo().access.updateApiKey(apiKey(1).keyId, { expiresAt: null });
      expect(await repo().access.getApiKey(apiKey(1).keyId)).toStrictEqual({ ...revoked, expiresAt: null });
      await expectStrataError(repo().access.updateApiKey(uuidFor(404), { purpose: 'x' }), 'KEY_NOT_FOUND');

      await repo().access.touchApiKey(apiKey(2).keyId, at(70));
      expect((await repo().access.getApiKey(apiKey(2).keyId))?.lastUsedAt).toBe(at(70));
      await repo().access.touchApiKey(apiKey(2).keyId, at(7_000));
      expect((await repo().access.getApiKey(apiKey(2).keyId))?.lastUsedAt).toBe(at(7_000));
      await repo().access.touchApiKey(uuidFor(404), at(70));
    });

    it('appends audit records and lists them newest first, per organization', async () => {
      const records: AuditRecord[] = Array.from({ length: 7 }, (_, i) => ({
        auditId: uuidFor(i + 1, 0xa0d),
        orgId: i === 3 ? OTHER_ORG : ORG,
        actorId: uuidFor(1, 0xd),
        action: 'apikey.create',
        target: `key/${i}`,
        details: { n: i, nested: { list: [1, 'two', null], flag: true } },
        timestamp: at(i),
        requestId: i % 2 === 0 ? `req-${i}` : null,
        clientIp: i % 2 === 0 ? '192.0.2.7' : null,
      }));
      for (const record of records) await repo().access.appendAudit(record);
      const listed = await collectAll((cursor) => repo().access.listAudit(ORG, { cursor, limit: 2 }), 2);
      expect(listed).toStrictEqual(records.filter((r) => r.orgId === ORG).reverse());
      expect((await repo().access.listAudit(OTHER_ORG, { limit: 10 })).items).toStrictEqual([records[3]]);
    });

    it('applies a list of access changes all together, or nothing when a guard or a write fails', async () => {
      const owner: Identity = { identityId: uuidFor(1, 0xd), kind: 'user', name: 'Ada', email: 'ada@example.org', createdAt: at(0) };
      const service: Identity = { identityId: uuidFor(2, 0xd), kind: 'service', name: 'ci', email: null, createdAt: at(1) };
      const record: AuditRecord = {
        auditId: uuidFor(1, 0xa0e),
        orgId: ORG,
        actorId: owner.identityId,
        action: 'key.create',
        target: 'k',
        details: { n: 1 },
        timestamp: at(2),
        requestId: null,
        clientIp: null,
      };
      await repo().projects.create(project(PROJECT, 'p'));
      await repo().access.applyAccessChanges([
        { kind: 'requireNoOrganization' },
        { kind: 'createOrganization', org: { orgId: ORG, name: 'Lab', createdAt: at(0) } },
        { kind: 'createIdentity', identity: owner },
        { kind: 'setOrgRole', membership: { orgId: ORG, identityId: owner.identityId, role: 'owner' } },
      ]);
      await expectStrataError(repo().access.applyAccessChanges([{ kind: 'requireNoOrganization' }]), 'ALREADY_BOOTSTRAPPED');

      // A guard that fails after writes in the same list: none of those writes remain.
      const key = { ...apiKey(2), identityId: service.identityId };
      await expectStrataError(
        repo().access.applyAccessChanges([
          { kind: 'createIdentity', identity: service },
          { kind: 'setOrgRole', membership: { orgId: ORG, identityId: service.identityId, role: 'member' } },
          { kind: 'setProjectAccess', membership: { projectId: PROJECT, identityId: service.identityId, access: 'read' } },
          { kind: 'createApiKey', key },
          { kind: 'appendAudit', record },
          { kind: 'requireAnotherOwner', orgId: ORG, identityId: owner.identityId },
        ]),
        'MEMBERSHIP_LAST_OWNER',
      );
      expect(await repo().access.getIdentity(service.identityId)).toBeNull();
      expect(await repo().access.getOrgRole(ORG, service.identityId)).toBeNull();
      expect(await repo().access.getProjectAccess(PROJECT, service.identityId)).toBeNull();
      expect(await repo().access.getApiKey(key.keyId)).toBeNull();
      expect((await repo().access.listAudit(ORG, { limit: 10 })).items).toStrictEqual([]);

      // A write that fails (a duplicate identity) undoes the earlier ones too.
      await expect(
        repo().access.applyAccessChanges([
          { kind: 'createApiKey', key },
          { kind: 'createIdentity', identity: owner },
        ]),
      ).rejects.toThrow();
      expect(await repo().access.getApiKey(key.keyId)).toBeNull();

      // The same list without the failing guard commits whole.
      await repo().access.applyAccessChanges([
        { kind: 'createIdentity', identity: service },
        { kind: 'setOrgRole', membership: { orgId: ORG, identityId: service.identityId, role: 'owner' } },
        { kind: 'createApiKey', key },
        { kind: 'appendAudit', record },
        { kind: 'requireAnotherOwner', orgId: ORG, identityId: owner.identityId },
        { kind: 'removeOrgMember', orgId: ORG, identityId: owner.identityId },
      ]);
      expect(await repo().access.getOrgRole(ORG, owner.identityId)).toBeNull();
      expect(await repo().access.getApiKey(key.keyId)).toStrictEqual(key);
      expect((await repo().access.listAudit(ORG, { limit: 10 })).items).toStrictEqual([record]);

      // Key guards: missing, rotated (unless allowed), revoked.
      await expectStrataError(repo().access.applyAccessChanges([{ kind: 'requireKeyActive', keyId: uuidFor(404) }]), 'KEY_NOT_FOUND');
      await repo().access.applyAccessChanges([{ kind: 'updateApiKey', keyId: key.keyId, patch: { replacedBy: uuidFor(9, 0xe) } }]);
      await expectStrataError(repo().access.applyAccessChanges([{ kind: 'requireKeyActive', keyId: key.keyId }]), 'KEY_ROTATED');
      await repo().access.applyAccessChanges([
        { kind: 'requireKeyActive', keyId: key.keyId, allowReplaced: true },
        { kind: 'updateApiKey', keyId: key.keyId, patch: { revokedAt: at(9) } },
      ]);
      await expectStrataError(
        repo().access.applyAccessChanges([{ kind: 'requireKeyActive', keyId: key.keyId, allowReplaced: true }]),
        'KEY_REVOKED',
      );
    });

    it('links OIDC subjects to identities once, and keeps preferences per identity', async () => {
      const user: Identity = { identityId: uuidFor(7, 0xd), kind: 'user', name: 'Ada', email: 'ada@lab.example', createdAt: at(1) };
      const link = { issuer: 'https://id.example', subject: 'ada', identityId: user.identityId, createdAt: at(1) };
      expect(await repo().access.findLinkedIdentity(link.issuer, link.subject)).toBeNull();
      await repo().access.applyAccessChanges([{ kind: 'createIdentity', identity: user }, { kind: 'linkIdentity', link }]);
      expect(await repo().access.findLinkedIdentity(link.issuer, link.subject)).toBe(user.identityId);
      // Same subject at another issuer is another person.
      expect(await repo().access.findLinkedIdentity('https://other.example', 'ada')).toBeNull();
      // A second link of the same subject fails whole: the identity it would have created is not kept.
      const twin: Identity = { ...user, identityId: uuidFor(8, 0xd) };
      await expectStrataError(
        repo().access.applyAccessChanges([
          { kind: 'createIdentity', identity: twin },
          { kind: 'linkIdentity', link: { ...link, identityId: twin.identityId } },
        ]),
        'IDENTITY_LINK_TAKEN',
      );
      expect(await repo().access.getIdentity(twin.identityId)).toBeNull();
      expect(await repo().access.findLinkedIdentity(link.issuer, link.subject)).toBe(user.identityId);

      expect(await repo().access.getPreferences(user.identityId)).toStrictEqual({});
      await repo().access.applyAccessChanges([{ kind: 'setPreferences', identityId: user.identityId, preferences: { theme: 'dark', n: 3, nested: { a: [1] } } }]);
      await repo().access.applyAccessChanges([{ kind: 'setPreferences', identityId: user.identityId, preferences: { theme: 'light' } }]);
      expect(await repo().access.getPreferences(user.identityId)).toStrictEqual({ theme: 'light' });
    });

    it('keeps web sessions by their HMAC and revokes one, those of an organization, or all of an identity', async () => {
      const user: Identity = { identityId: uuidFor(9, 0xd), kind: 'user', name: 'Web', email: null, createdAt: at(1) };
      const session = (n: number) => ({ sessionHmac: `hmac-${n}`, identityId: user.identityId, orgId: n === 1 ? ORG : null, createdAt: at(n), expiresAt: at(1_000 + n), revokedAt: null });
      await repo().access.applyAccessChanges([
        { kind: 'createIdentity', identity: user },
        { kind: 'createWebSession', session: session(1) },
        { kind: 'createWebSession', session: session(2) },
        { kind: 'createWebSession', session: session(3) },
      ]);
      expect(await repo().access.getWebSession('hmac-1')).toStrictEqual(session(1));
      expect(await repo().access.getWebSession('hmac-404')).toBeNull();
      // An organization's SSO ends: only the sessions it opened (hmac-1 has orgId ORG).
      await repo().access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(40), orgId: OTHER_ORG }]);
      expect((await repo().access.getWebSession('hmac-1'))?.revokedAt).toBeNull();
      await repo().access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(45), orgId: ORG }]);
      expect((await repo().access.getWebSession('hmac-1'))?.revokedAt).toBe(at(45));
      expect((await repo().access.getWebSession('hmac-3'))?.revokedAt).toBeNull();
      await repo().access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(50), sessionHmac: 'hmac-2' }]);
      expect((await repo().access.getWebSession('hmac-2'))?.revokedAt).toBe(at(50));
      await repo().access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(60), identityId: user.identityId }]);
      expect((await repo().access.getWebSession('hmac-3'))?.revokedAt).toBe(at(60));
      // An already revoked session keeps the time it was revoked.
      expect((await repo().access.getWebSession('hmac-2'))?.revokedAt).toBe(at(50));
    });
  });
}