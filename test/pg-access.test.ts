import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { StrataError } from '../engine/errors.js';
import type { AccessChange, MetadataRepository } from '../engine/ports/metadata-repository.js';
import { openPgRepository } from '../engine/storage/pg-repository.js';
import { encodeCursor } from '../engine/storage/sqlite-cursor.js';
import { openSqliteRepository } from '../engine/storage/sqlite-repository.js';
import type { ApiKeyRecord, AuditRecord, Identity, ScimGroup, ScimUser, SsoConnection, WebSession } from '../engine/types.js';
import { at, collectAll, expectStrataError, ORG, PROJECT, uuidFor } from './conformance/metadata-repository-fixtures.js';
import { createTestSchema, TEST_DATABASE_URL } from './helpers/postgres.js';

// The access changes and guards the conformance suite (test/conformance/metadata-repository-access.ts)
// does not reach, the SSO, SCIM, sign-in and session ones the engine's own tests run on SQLite only:
// each test runs against both stores, so Postgres is shown to answer exactly as SQLite does. The last
// block is Postgres only: the unique indexes that keep a rule when a writer skips the access lock.

const OTHER_ORG = uuidFor(2, 0xb);

interface Opened {
  repository: MetadataRepository;
  cleanup: () => Promise<void>;
}
type Opener = () => Promise<Opened>;

const openSqlite: Opener = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'strata-pg-access-'));
  try {
    const repository = openSqliteRepository({ file: join(dir, 'metadata.db') });
    return {
      repository,
      cleanup: async () => {
        await repository.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
};

const openPostgres: Opener = async () => {
  const schema = await createTestSchema();
  try {
    const repository = await openPgRepository({ url: schema.url, max: 4 });
    return {
      repository,
      cleanup: async () => {
        try {
          await repository.close();
        } finally {
          await schema.drop();
        }
      },
    };
  } catch (error) {
    await schema.drop();
    throw error;
  }
};

const person = (n: number, name = `Person ${n}`): Identity => ({ identityId: uuidFor(n, 0xd), kind: 'user', name, email: `p${n}@lab.example`, createdAt: at(n) });

const apiKey = (n: number): ApiKeyRecord => ({
  keyId: uuidFor(n, 0xe),
  environment: 'live',
  secretHmac: `hmac-${n}`,
  identityId: uuidFor(n, 0xd),
  orgId: ORG,
  projectId: null,
  ownerId: uuidFor(1, 0xd),
  purpose: `job ${n}`,
  createdAt: at(n),
  expiresAt: null,
  rotateBy: null,
  revokedAt: null,
  lastUsedAt: null,
  replacedBy: null,
  graceUntil: null,
  roleCap: null,
});

const connection = (n: number, extra: Partial<SsoConnection> = {}): SsoConnection => ({
  connectionId: uuidFor(n, 0x55),
  orgId: ORG,
  issuer: `https://idp${n}.example`,
  clientId: `client-${n}`,
  audience: `aud-${n}`,
  tokenType: 'at+jwt',
  scopes: ['openid', 'email'],
  domains: [],
  testedAt: null,
  testedSubject: null,
  active: false,
  activatedAt: null,
  createdAt: at(n),
  ...extra,
});

const scimUser = (n: number, userName: string, extra: Partial<ScimUser> = {}): ScimUser => ({
  orgId: ORG,
  identityId: uuidFor(n, 0xd),
  userName,
  externalId: null,
  active: true,
  attributes: { name: { givenName: `G${n}` }, emails: [{ value: `p${n}@lab.example`, primary: true }] },
  createdAt: at(n),
  updatedAt: at(n),
  version: 1,
  ...extra,
});

const scimGroup = (n: number, displayName: string, members: string[], extra: Partial<ScimGroup> = {}): ScimGroup => ({
  orgId: ORG,
  groupId: uuidFor(n, 0x6),
  displayName,
  externalId: null,
  members,
  createdAt: at(n),
  updatedAt: at(n),
  version: 1,
  ...extra,
});

const audit = (n: number, orgId = ORG): AuditRecord => ({
  auditId: uuidFor(n, 0xa0),
  orgId,
  actorId: uuidFor(1, 0xd),
  action: 'test.action',
  target: `t/${n}`,
  details: { n, text: 'ümlaut ✓' },
  timestamp: at(n),
  requestId: n % 2 === 0 ? `req-${n}` : null,
  clientIp: null,
});

const withOrg: AccessChange[] = [
  { kind: 'createOrganization', org: { orgId: ORG, name: 'Lab', createdAt: at(0) } },
  { kind: 'createOrganization', org: { orgId: OTHER_ORG, name: 'Other', createdAt: at(0) } },
];
const createPeople = (...ns: number[]): AccessChange[] => ns.map((n) => ({ kind: 'createIdentity', identity: person(n) }));

/** Runs `a` and `b` at once; exactly one must fail, with `code`. Returns which one succeeded. */
async function exactlyOneWins(a: Promise<void>, b: Promise<void>, code: StrataError['code']): Promise<0 | 1> {
  const results = await Promise.allSettled([a, b]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(failed, 'exactly one fails').toHaveLength(1);
  expect(failed[0]!.reason).toBeInstanceOf(StrataError);
  expect((failed[0]!.reason as StrataError).code).toBe(code);
  return results[0]!.status === 'fulfilled' ? 0 : 1;
}

function accessChangesSuite(name: string, open: Opener): void {
  const test = (title: string, body: (repo: MetadataRepository) => Promise<void>) =>
    it(title, async () => {
      const opened = await open();
      try {
        await body(opened.repository);
      } finally {
        await opened.cleanup();
      }
    });

  describe(`access changes beyond the conformance suite: ${name}`, () => {
    test('a concurrent first sign-in of one subject links it once (IDENTITY_LINK_TAKEN for the other)', async (repo) => {
      const link = { issuer: 'https://id.example', subject: 'ada', createdAt: at(1) };
      const signIn = (n: number) => repo.access.applyAccessChanges([...createPeople(n), { kind: 'linkIdentity', link: { ...link, identityId: person(n).identityId } }]);
      const winner = await exactlyOneWins(signIn(1), signIn(2), 'IDENTITY_LINK_TAKEN');
      const [won, lost] = winner === 0 ? [person(1), person(2)] : [person(2), person(1)];
      expect(await repo.access.findLinkedIdentity(link.issuer, link.subject)).toBe(won.identityId);
      // The loser's identity went with its transaction.
      expect(await repo.access.getIdentity(lost.identityId)).toBeNull();
      expect(await repo.access.getIdentity(won.identityId)).toStrictEqual(won);
    });

    test('two owners demoting each other at once: one succeeds, the other is MEMBERSHIP_LAST_OWNER', async (repo) => {
      const [x, y] = [person(1).identityId, person(2).identityId];
      await repo.access.applyAccessChanges([
        ...withOrg,
        ...createPeople(1, 2),
        { kind: 'setOrgRole', membership: { orgId: ORG, identityId: x, role: 'owner' } },
        { kind: 'setOrgRole', membership: { orgId: ORG, identityId: y, role: 'owner' } },
      ]);
      const demote = (id: string) =>
        repo.access.applyAccessChanges([
          { kind: 'requireAnotherOwner', orgId: ORG, identityId: id },
          { kind: 'setOrgRole', membership: { orgId: ORG, identityId: id, role: 'member' } },
        ]);
      // Several rounds: a race that interleaves the two guards before either write happens by timing,
      // and one round alone may not hit it.
      let winner: 0 | 1 = 0;
      for (let round = 0; round < 10; round += 1) {
        await repo.access.setOrgRole({ orgId: ORG, identityId: x, role: 'owner' });
        await repo.access.setOrgRole({ orgId: ORG, identityId: y, role: 'owner' });
        winner = await exactlyOneWins(demote(x), demote(y), 'MEMBERSHIP_LAST_OWNER');
        const members = await repo.access.listOrgMembers(ORG);
        expect(members.filter((m) => m.role === 'owner').map((m) => m.identityId)).toStrictEqual([winner === 0 ? y : x]);
      }
      // Removal is guarded the same way; an owner of another organization does not count.
      await repo.access.applyAccessChanges([...createPeople(3), { kind: 'setOrgRole', membership: { orgId: OTHER_ORG, identityId: person(3).identityId, role: 'owner' } }]);
      const last = winner === 0 ? y : x;
      await expectStrataError(
        repo.access.applyAccessChanges([
          { kind: 'requireAnotherOwner', orgId: ORG, identityId: last },
          { kind: 'removeOrgMember', orgId: ORG, identityId: last },
        ]),
        'MEMBERSHIP_LAST_OWNER',
        { orgId: ORG, identityId: last },
      );
      expect(await repo.access.getOrgRole(ORG, last)).toBe('owner');
    });

    test('putScimUser: userName is unique per organization in any case (SCIM_USERNAME_TAKEN)', async (repo) => {
      await repo.access.applyAccessChanges([...withOrg, ...createPeople(1, 2, 3, 4, 5)]);
      await repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(1, 'Ada.Lovelace@Lab.Example') }]);
      for (const taken of ['ada.lovelace@lab.example', 'ADA.LOVELACE@LAB.EXAMPLE']) {
        await expectStrataError(repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(2, taken) }]), 'SCIM_USERNAME_TAKEN', { userName: taken });
      }
      // Beyond ASCII: the case fold and the composition are the same in both stores (keyOf, in JS).
      await repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(3, 'ÅSA.ÖBERG') }]);
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(2, 'åsa.öberg') }]), 'SCIM_USERNAME_TAKEN');
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(2, 'A\u030asa.O\u0308berg') }]), 'SCIM_USERNAME_TAKEN');
      expect((await repo.access.findScimUserByUserName(ORG, 'a\u030aSA.öberg'))?.identityId).toBe(person(3).identityId);
      // The same name in another organization, and a user renaming itself to another case, are fine.
      await repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(2, 'ada.lovelace@lab.example', { orgId: OTHER_ORG }) }]);
      const renamed = scimUser(1, 'ADA.lovelace@lab.example', { version: 2, updatedAt: at(50), active: false, externalId: 'ext-1' });
      await repo.access.applyAccessChanges([{ kind: 'putScimUser', user: renamed }]);
      expect(await repo.access.getScimUser(ORG, renamed.identityId)).toStrictEqual(renamed);
      expect(await repo.access.findScimUserByUserName(ORG, 'ada.LOVELACE@lab.example')).toStrictEqual(renamed);
      expect(await repo.access.findScimUserByUserName(ORG, 'nobody')).toBeNull();
      expect(await repo.access.getScimUser(OTHER_ORG, renamed.identityId)).toBeNull();
      // Two directories' requests creating the same name at once: one user gets it.
      const create = (n: number) => repo.access.applyAccessChanges([{ kind: 'putScimUser', user: scimUser(n, 'Grace@lab.example') }]);
      await exactlyOneWins(create(4), create(5), 'SCIM_USERNAME_TAKEN');
      expect((await repo.access.listScimUsers(ORG)).map((u) => u.userName)).toStrictEqual(['ADA.lovelace@lab.example', 'ÅSA.ÖBERG', 'Grace@lab.example']);
    });

    test('SCIM groups: members, names unique in any case, the groups of a person, versions and deletes', async (repo) => {
      const [a, b, c] = [person(1).identityId, person(2).identityId, person(3).identityId];
      await repo.access.applyAccessChanges([...withOrg, ...createPeople(1, 2, 3)]);
      await repo.access.applyAccessChanges([
        { kind: 'putScimUser', user: scimUser(1, 'a') },
        { kind: 'putScimUser', user: scimUser(2, 'b') },
        { kind: 'putScimUser', user: scimUser(3, 'c') },
        // Listed twice and out of order: kept once, read back in id order.
        { kind: 'putScimGroup', group: scimGroup(1, 'zeta', [c, a, c]) },
        { kind: 'putScimGroup', group: scimGroup(2, 'Alpha', [a]) },
        { kind: 'putScimGroup', group: scimGroup(3, 'beta', [a, b]) },
      ]);
      expect(await repo.access.getScimGroup(ORG, scimGroup(1, '', []).groupId)).toStrictEqual(scimGroup(1, 'zeta', [a, c]));
      expect((await repo.access.listScimGroups(ORG)).map((g) => g.displayName)).toStrictEqual(['zeta', 'Alpha', 'beta']);
      // By the case-folded name.
      expect((await repo.access.listScimGroupsOf(ORG, a)).map((g) => g.displayName)).toStrictEqual(['Alpha', 'beta', 'zeta']);
      expect(await repo.access.listScimGroupsOf(OTHER_ORG, a)).toStrictEqual([]);
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'putScimGroup', group: scimGroup(4, 'ALPHA', []) }]), 'SCIM_GROUP_NAME_TAKEN', { displayName: 'ALPHA' });
      expect(await repo.access.getScimGroup(ORG, scimGroup(4, '', []).groupId)).toBeNull();

      // Replacing a group replaces its members; a stale version is refused before anything is written.
      const next = scimGroup(3, 'Beta', [b, c], { version: 2, updatedAt: at(9) });
      await repo.access.applyAccessChanges([{ kind: 'requireScimVersion', orgId: ORG, resource: 'group', id: next.groupId, version: 1 }, { kind: 'putScimGroup', group: next }]);
      expect(await repo.access.getScimGroup(ORG, next.groupId)).toStrictEqual(next);
      await expectStrataError(
        repo.access.applyAccessChanges([{ kind: 'requireScimVersion', orgId: ORG, resource: 'group', id: next.groupId, version: 1 }, { kind: 'putScimGroup', group: scimGroup(3, 'x', []) }]),
        'SCIM_VERSION_MISMATCH',
        { resource: 'group', id: next.groupId },
      );
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'requireScimVersion', orgId: ORG, resource: 'user', id: b, version: 2 }]), 'SCIM_VERSION_MISMATCH');
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'requireScimVersion', orgId: ORG, resource: 'user', id: uuidFor(404), version: 1 }]), 'SCIM_VERSION_MISMATCH');
      await repo.access.applyAccessChanges([{ kind: 'requireScimVersion', orgId: ORG, resource: 'user', id: b, version: 1 }]);

      // Deleting a user takes it out of its groups; deleting a group drops its members.
      await repo.access.applyAccessChanges([{ kind: 'deleteScimUser', orgId: ORG, identityId: c }]);
      expect(await repo.access.getScimUser(ORG, c)).toBeNull();
      expect((await repo.access.getScimGroup(ORG, next.groupId))?.members).toStrictEqual([b]);
      expect((await repo.access.getScimGroup(ORG, scimGroup(1, '', []).groupId))?.members).toStrictEqual([a]);
      await repo.access.applyAccessChanges([{ kind: 'deleteScimGroup', orgId: ORG, groupId: next.groupId }]);
      expect(await repo.access.getScimGroup(ORG, next.groupId)).toBeNull();
      expect(await repo.access.listScimGroupsOf(ORG, b)).toStrictEqual([]);
      // The name is free again.
      await repo.access.applyAccessChanges([{ kind: 'putScimGroup', group: scimGroup(5, 'BETA', []) }]);
      expect((await repo.access.listScimGroups(ORG)).map((g) => [g.displayName, g.members])).toStrictEqual([
        ['zeta', [a]],
        ['Alpha', [a]],
        ['BETA', []],
      ]);
    });

    test('SCIM configuration: put, replace, read by organization and by token', async (repo) => {
      await repo.access.applyAccessChanges(withOrg);
      const config = { orgId: ORG, tokenId: 'tok-1', secretHmac: 'h1', createdAt: at(1), defaultRole: 'viewer' as const, groupRoles: { Admins: 'admin' as const, Dev: 'member' as const } };
      expect(await repo.access.getScimConfig(ORG)).toBeNull();
      await repo.access.applyAccessChanges([{ kind: 'putScimConfig', config }]);
      expect(await repo.access.getScimConfig(ORG)).toStrictEqual(config);
      expect(await repo.access.getScimConfigByToken('tok-1')).toStrictEqual(config);
      const rotated = { ...config, tokenId: 'tok-2', secretHmac: 'h2', createdAt: at(2), groupRoles: {} };
      await repo.access.applyAccessChanges([{ kind: 'putScimConfig', config: rotated }]);
      expect(await repo.access.getScimConfig(ORG)).toStrictEqual(rotated);
      expect(await repo.access.getScimConfigByToken('tok-1')).toBeNull();
      expect(await repo.access.getScimConfigByToken('tok-2')).toStrictEqual(rotated);
    });

    test('SSO connections: put and replace with domains; lookups by domain and issuer see active ones only', async (repo) => {
      await repo.access.applyAccessChanges(withOrg);
      const one = connection(2, { domains: [{ domain: 'lab.example', verificationToken: 't1', verifiedAt: null }, { domain: 'b.example', verificationToken: 't2', verifiedAt: null }] });
      const two = connection(1, { orgId: ORG, issuer: 'https://shared.example' });
      await repo.access.applyAccessChanges([
        { kind: 'putSsoConnection', connection: one },
        { kind: 'putSsoConnection', connection: two },
      ]);
      // Domains in domain order; connections by creation.
      const sorted = { ...one, domains: [...one.domains].reverse() };
      expect(await repo.access.getSsoConnection(one.connectionId)).toStrictEqual(sorted);
      expect((await repo.access.listSsoConnections(ORG)).map((c) => c.connectionId)).toStrictEqual([two.connectionId, one.connectionId]);
      expect(await repo.access.listSsoConnections(OTHER_ORG)).toStrictEqual([]);
      expect(await repo.access.findSsoConnectionForDomain('lab.example')).toBeNull();

      const verified = { ...sorted, domains: sorted.domains.map((d) => (d.domain === 'lab.example' ? { ...d, verifiedAt: at(5) } : d)) };
      await repo.access.applyAccessChanges([
        { kind: 'requireDomainUnclaimed', domain: 'lab.example', connectionId: one.connectionId },
        { kind: 'putSsoConnection', connection: verified },
      ]);
      // Verified but inactive: not where anyone signs in yet.
      expect(await repo.access.findSsoConnectionForDomain('lab.example')).toBeNull();
      const active = { ...verified, active: true, activatedAt: at(6), testedAt: at(6), testedSubject: 'sub', scopes: ['openid'] };
      await repo.access.applyAccessChanges([
        { kind: 'requireIssuerUnclaimed', issuer: active.issuer, connectionId: active.connectionId },
        { kind: 'putSsoConnection', connection: active },
      ]);
      expect(await repo.access.findSsoConnectionForDomain('lab.example')).toStrictEqual(active);
      expect(await repo.access.findSsoConnectionForDomain('b.example')).toBeNull();
      expect(await repo.access.findActiveSsoConnection(active.issuer)).toStrictEqual(active);
      expect(await repo.access.findActiveSsoConnection(two.issuer)).toBeNull();

      // A put replaces the domain list whole; org and creation time never change.
      const fewer = { ...active, orgId: OTHER_ORG, createdAt: at(99), domains: [{ domain: 'c.example', verificationToken: 't3', verifiedAt: at(7) }] };
      await repo.access.applyAccessChanges([{ kind: 'putSsoConnection', connection: fewer }]);
      expect(await repo.access.getSsoConnection(one.connectionId)).toStrictEqual({ ...fewer, orgId: ORG, createdAt: active.createdAt });
      expect(await repo.access.findSsoConnectionForDomain('lab.example')).toBeNull();
      expect(await repo.access.getSsoConnection(uuidFor(404))).toBeNull();
    });

    test('requireDomainUnclaimed and requireIssuerUnclaimed: only another connection claims', async (repo) => {
      await repo.access.applyAccessChanges(withOrg);
      const a = connection(1, { issuer: 'https://same.example', active: true, domains: [{ domain: 'lab.example', verificationToken: 't', verifiedAt: at(1) }, { domain: 'open.example', verificationToken: 't', verifiedAt: null }] });
      const b = connection(2, { issuer: 'https://same.example' });
      await repo.access.applyAccessChanges([
        { kind: 'putSsoConnection', connection: a },
        { kind: 'putSsoConnection', connection: b },
      ]);
      await expectStrataError(
        repo.access.applyAccessChanges([
          { kind: 'requireDomainUnclaimed', domain: 'lab.example', connectionId: b.connectionId },
          { kind: 'putSsoConnection', connection: { ...b, domains: [{ domain: 'lab.example', verificationToken: 'u', verifiedAt: at(2) }] } },
        ]),
        'SSO_DOMAIN_TAKEN',
        { domain: 'lab.example' },
      );
      expect((await repo.access.getSsoConnection(b.connectionId))?.domains).toStrictEqual([]);
      // Its own verified domain, and a domain another connection has only asked for, are unclaimed.
      await repo.access.applyAccessChanges([
        { kind: 'requireDomainUnclaimed', domain: 'lab.example', connectionId: a.connectionId },
        { kind: 'requireDomainUnclaimed', domain: 'open.example', connectionId: b.connectionId },
        { kind: 'requireIssuerUnclaimed', issuer: a.issuer, connectionId: a.connectionId },
      ]);
      await expectStrataError(
        repo.access.applyAccessChanges([
          { kind: 'requireIssuerUnclaimed', issuer: b.issuer, connectionId: b.connectionId },
          { kind: 'putSsoConnection', connection: { ...b, active: true } },
        ]),
        'SSO_ISSUER_TAKEN',
        { issuer: b.issuer },
      );
      expect((await repo.access.getSsoConnection(b.connectionId))?.active).toBe(false);
      // Once the first is inactive, the issuer is free.
      await repo.access.applyAccessChanges([{ kind: 'putSsoConnection', connection: { ...a, active: false } }]);
      await repo.access.applyAccessChanges([
        { kind: 'requireIssuerUnclaimed', issuer: b.issuer, connectionId: b.connectionId },
        { kind: 'putSsoConnection', connection: { ...b, active: true } },
      ]);
      expect((await repo.access.findActiveSsoConnection(b.issuer))?.connectionId).toBe(b.connectionId);

      // Two connections verifying one domain at once: one gets it.
      const c = connection(3);
      await repo.access.applyAccessChanges([{ kind: 'putSsoConnection', connection: c }]);
      const verify = (conn: SsoConnection) =>
        repo.access.applyAccessChanges([
          { kind: 'requireDomainUnclaimed', domain: 'race.example', connectionId: conn.connectionId },
          { kind: 'putSsoConnection', connection: { ...conn, domains: [{ domain: 'race.example', verificationToken: 'r', verifiedAt: at(9) }] } },
        ]);
      await exactlyOneWins(verify(b), verify(c), 'SSO_DOMAIN_TAKEN');
    });

    test('revokeWebSessions by each selector, alone and together; setIdentityProfile; preferences', async (repo) => {
      const [u, v] = [person(1), person(2)];
      const session = (n: number, identity: Identity, orgId: string | null): WebSession => ({
        sessionHmac: `s-${n}`,
        identityId: identity.identityId,
        orgId,
        createdAt: at(n),
        expiresAt: at(1000 + n),
        revokedAt: null,
      });
      const sessions = [session(1, u, ORG), session(2, u, null), session(3, v, ORG), session(4, v, OTHER_ORG), session(5, v, null), session(6, u, OTHER_ORG)];
      await repo.access.applyAccessChanges([...createPeople(1, 2), ...sessions.map((s): AccessChange => ({ kind: 'createWebSession', session: s }))]);
      const revoked = async () => Object.fromEntries(await Promise.all(sessions.map(async (s) => [s.sessionHmac, (await repo.access.getWebSession(s.sessionHmac))?.revokedAt ?? null])));
      // No selector, or ones that match nothing: nothing changes.
      await repo.access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(10) }]);
      await repo.access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(10), sessionHmac: 's-404', identityId: uuidFor(404), orgId: uuidFor(404) }]);
      expect(Object.values(await revoked())).toStrictEqual(sessions.map(() => null));
      await repo.access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(20), orgId: ORG }]);
      await repo.access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(30), sessionHmac: 's-2', orgId: OTHER_ORG }]);
      expect(await revoked()).toStrictEqual({ 's-1': at(20), 's-2': at(30), 's-3': at(20), 's-4': at(30), 's-5': null, 's-6': at(30) });
      await repo.access.applyAccessChanges([{ kind: 'revokeWebSessions', at: at(40), identityId: v.identityId }]);
      expect(await revoked()).toStrictEqual({ 's-1': at(20), 's-2': at(30), 's-3': at(20), 's-4': at(30), 's-5': at(40), 's-6': at(30) });
      expect(await repo.access.getWebSession('s-5')).toStrictEqual({ ...session(5, v, null), revokedAt: at(40) });

      await repo.access.applyAccessChanges([{ kind: 'setIdentityProfile', identityId: u.identityId, name: 'Ada King', email: null }]);
      expect(await repo.access.getIdentity(u.identityId)).toStrictEqual({ ...u, name: 'Ada King', email: null });
      expect(await repo.access.getIdentity(v.identityId)).toStrictEqual(v);

      expect(await repo.access.getPreferences(v.identityId)).toStrictEqual({});
      const preferences = { theme: 'dark', list: [1, 'two', null, { deep: true }], unicode: 'ü ✓ \u0000 end' };
      await repo.access.applyAccessChanges([{ kind: 'setPreferences', identityId: v.identityId, preferences }]);
      expect(await repo.access.getPreferences(v.identityId)).toStrictEqual(preferences);
      expect(await repo.access.getPreferences(u.identityId)).toStrictEqual({});
    });

    test('touchApiKey only moves lastUsedAt forward and changes nothing else', async (repo) => {
      await repo.access.applyAccessChanges([{ kind: 'createApiKey', key: apiKey(1) }, { kind: 'createApiKey', key: apiKey(2) }]);
      await repo.access.touchApiKey(apiKey(1).keyId, at(10));
      expect(await repo.access.getApiKey(apiKey(1).keyId)).toStrictEqual({ ...apiKey(1), lastUsedAt: at(10) });
      // A slow request finishing late does not rewind it; the same time again is a no-op.
      await repo.access.touchApiKey(apiKey(1).keyId, at(5));
      await repo.access.touchApiKey(apiKey(1).keyId, at(10));
      expect((await repo.access.getApiKey(apiKey(1).keyId))?.lastUsedAt).toBe(at(10));
      await repo.access.touchApiKey(apiKey(1).keyId, '2026-11-22T10:00:10.001Z');
      expect((await repo.access.getApiKey(apiKey(1).keyId))?.lastUsedAt).toBe('2026-11-22T10:00:10.001Z');
      await Promise.all([repo.access.touchApiKey(apiKey(2).keyId, at(30)), repo.access.touchApiKey(apiKey(2).keyId, at(20))]);
      expect(await repo.access.getApiKey(apiKey(2).keyId)).toStrictEqual({ ...apiKey(2), lastUsedAt: at(30) });
      await repo.access.touchApiKey(uuidFor(404), at(40));
      expect(await repo.access.getApiKey(uuidFor(404))).toBeNull();
    });

    test('updateApiKey and requireKeyActive inside a list; removeProjectMember', async (repo) => {
      const key = apiKey(1);
      await repo.access.applyAccessChanges([
        { kind: 'createApiKey', key },
        { kind: 'setProjectAccess', membership: { projectId: PROJECT, identityId: key.identityId, access: 'write' } },
      ]);
      await repo.access.applyAccessChanges([
        { kind: 'requireKeyActive', keyId: key.keyId },
        { kind: 'updateApiKey', keyId: key.keyId, patch: { purpose: 'renamed', roleCap: 'viewer', expiresAt: undefined } },
        { kind: 'removeProjectMember', projectId: PROJECT, identityId: key.identityId },
      ]);
      expect(await repo.access.getApiKey(key.keyId)).toStrictEqual({ ...key, purpose: 'renamed', roleCap: 'viewer' });
      expect(await repo.access.getProjectAccess(PROJECT, key.identityId)).toBeNull();
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'updateApiKey', keyId: uuidFor(404), patch: { purpose: 'x' } }]), 'KEY_NOT_FOUND', { keyId: uuidFor(404) });
      // Two rotations of one key at once: the second finds it rotated.
      const rotate = (n: number) =>
        repo.access.applyAccessChanges([
          { kind: 'requireKeyActive', keyId: key.keyId },
          { kind: 'createApiKey', key: apiKey(n) },
          { kind: 'updateApiKey', keyId: key.keyId, patch: { replacedBy: apiKey(n).keyId, graceUntil: at(n) } },
        ]);
      const winner = await exactlyOneWins(rotate(2), rotate(3), 'KEY_ROTATED');
      const next = apiKey(winner === 0 ? 2 : 3);
      expect((await repo.access.getApiKey(key.keyId))?.replacedBy).toBe(next.keyId);
      expect(await repo.access.listApiKeys(ORG)).toStrictEqual([{ ...key, purpose: 'renamed', roleCap: 'viewer', replacedBy: next.keyId, graceUntil: next.createdAt }, next]);
    });

    test('a failing guard after every kind of write leaves none of them', async (repo) => {
      await repo.access.applyAccessChanges([...withOrg, ...createPeople(1)]);
      const u = person(1).identityId;
      const before = await snapshotOf(repo);
      await expectStrataError(
        repo.access.applyAccessChanges([
          ...createPeople(2),
          { kind: 'linkIdentity', link: { issuer: 'https://id.example', subject: 's', identityId: u, createdAt: at(1) } },
          { kind: 'setPreferences', identityId: u, preferences: { a: 1 } },
          { kind: 'setIdentityProfile', identityId: u, name: 'Changed', email: null },
          { kind: 'createWebSession', session: { sessionHmac: 'w', identityId: u, orgId: null, createdAt: at(1), expiresAt: at(2), revokedAt: null } },
          { kind: 'putSsoConnection', connection: connection(1, { domains: [{ domain: 'x.example', verificationToken: 't', verifiedAt: at(1) }] }) },
          { kind: 'putScimConfig', config: { orgId: ORG, tokenId: 't', secretHmac: 'h', createdAt: at(1), defaultRole: 'viewer', groupRoles: {} } },
          { kind: 'putScimUser', user: scimUser(1, 'u') },
          { kind: 'putScimGroup', group: scimGroup(1, 'g', [u]) },
          { kind: 'setOrgRole', membership: { orgId: ORG, identityId: u, role: 'owner' } },
          { kind: 'createApiKey', key: apiKey(1) },
          { kind: 'appendAudit', record: audit(1) },
          { kind: 'requireNoOrganization' },
        ]),
        'ALREADY_BOOTSTRAPPED',
      );
      expect(await snapshotOf(repo)).toStrictEqual(before);
    });

    test('listAudit pages newest first per organization, stable while records are added', async (repo) => {
      const records = Array.from({ length: 23 }, (_, i) => audit(i + 1, i % 5 === 4 ? OTHER_ORG : ORG));
      // Half through applyAccessChanges, half on their own: one sequence orders both.
      for (const [i, record] of records.entries()) {
        if (i % 2 === 0) await repo.access.appendAudit(record);
        else await repo.access.applyAccessChanges([{ kind: 'appendAudit', record }]);
      }
      const mine = records.filter((r) => r.orgId === ORG).reverse();
      for (const limit of [1, 2, 3, mine.length - 1, mine.length, mine.length + 1]) {
        expect(await collectAll((cursor) => repo.access.listAudit(ORG, { cursor, limit }), limit)).toStrictEqual(mine);
      }
      // A full last page has no cursor after it.
      const whole = await repo.access.listAudit(ORG, { limit: mine.length });
      expect(whole.nextCursor).toBeUndefined();
      // A record added while paging appears on no later page, and nothing repeats or is skipped.
      const first = await repo.access.listAudit(ORG, { limit: 4 });
      await repo.access.appendAudit(audit(100));
      const rest = await collectAll((cursor) => repo.access.listAudit(ORG, { cursor: cursor ?? first.nextCursor!, limit: 4 }), 4);
      expect([...first.items, ...rest]).toStrictEqual(mine);
      expect((await repo.access.listAudit(ORG, { limit: 1 })).items).toStrictEqual([audit(100)]);
      expect((await repo.access.listAudit(OTHER_ORG, { limit: 100 })).items).toStrictEqual(records.filter((r) => r.orgId === OTHER_ORG).reverse());
      expect(await repo.access.listAudit(uuidFor(404), { limit: 5 })).toStrictEqual({ items: [] });
      // A cursor past everything, one of another listing, and a bad limit.
      expect(await repo.access.listAudit(ORG, { cursor: encodeCursor('audit', 0), limit: 5 })).toStrictEqual({ items: [] });
      await expectStrataError(repo.access.listAudit(ORG, { cursor: encodeCursor('history', 5), limit: 5 }), 'INVALID_CURSOR');
      await expect(repo.access.listAudit(ORG, { limit: 0 })).rejects.toThrow(TypeError);
    });

    test('listings sort by byte order, as SQLite compares text', async (repo) => {
      const names = ['b', 'B', 'a', 'é', 'Z', 'e', 'ä', '_', 'a b', 'ab'];
      await repo.access.applyAccessChanges(names.map((name, i): AccessChange => ({ kind: 'createOrganization', org: { orgId: uuidFor(i, 0xb), name, createdAt: at(i) } })));
      const bytes = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      expect((await repo.access.listOrganizations()).map((o) => o.name)).toStrictEqual(bytes);
      // Members by identity id, whatever the ids look like.
      const ids = ['Zed', 'abc', 'Abd', 'ábc', '0', 'a-c'];
      for (const id of ids) await repo.access.setOrgRole({ orgId: ORG, identityId: id, role: 'member' });
      expect((await repo.access.listOrgMembers(ORG)).map((m) => m.identityId)).toStrictEqual([...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
    });

    test('a lookup by a key holding NUL finds nothing', async (repo) => {
      await repo.access.applyAccessChanges([...withOrg, ...createPeople(1)]);
      const nul = 'a\u0000b';
      expect(await repo.access.getOrganization(nul)).toBeNull();
      expect(await repo.access.getIdentity(nul)).toBeNull();
      expect(await repo.access.getOrgRole(ORG, nul)).toBeNull();
      expect(await repo.access.listOrgMembers(nul)).toStrictEqual([]);
      expect(await repo.access.findLinkedIdentity('https://id.example', nul)).toBeNull();
      expect(await repo.access.getPreferences(nul)).toStrictEqual({});
      expect(await repo.access.getWebSession(nul)).toBeNull();
      expect(await repo.access.findSsoConnectionForDomain(nul)).toBeNull();
      expect(await repo.access.findScimUserByUserName(ORG, nul)).toBeNull();
      expect(await repo.access.listScimGroupsOf(ORG, nul)).toStrictEqual([]);
      expect(await repo.access.getApiKey(nul)).toBeNull();
      expect(await repo.access.listAudit(nul, { limit: 3 })).toStrictEqual({ items: [] });
      await repo.access.touchApiKey(nul, at(1));
      await expectStrataError(repo.access.applyAccessChanges([{ kind: 'requireKeyActive', keyId: nul }]), 'KEY_NOT_FOUND');
      await expectStrataError(repo.access.updateApiKey(nul, { purpose: 'x' }), 'KEY_NOT_FOUND');
    });
  });
}

/** Everything the access repository can show about ORG and person 1 (for "nothing was written"). */
async function snapshotOf(repo: MetadataRepository): Promise<unknown> {
  const u = person(1).identityId;
  const a = repo.access;
  return {
    identities: [await a.getIdentity(u), await a.getIdentity(person(2).identityId)],
    link: await a.findLinkedIdentity('https://id.example', 's'),
    preferences: await a.getPreferences(u),
    session: await a.getWebSession('w'),
    sso: await a.listSsoConnections(ORG),
    domain: await a.findSsoConnectionForDomain('x.example'),
    scim: [await a.getScimConfig(ORG), await a.listScimUsers(ORG), await a.listScimGroups(ORG), await a.listScimGroupsOf(ORG, u)],
    members: await a.listOrgMembers(ORG),
    keys: await a.listApiKeys(ORG),
    audit: await a.listAudit(ORG, { limit: 10 }),
    orgs: await a.listOrganizations(),
  };
}

accessChangesSuite('sqlite', openSqlite);
accessChangesSuite('postgres', openPostgres);

describe('postgres: the unique indexes keep their rules for a writer without the access lock', () => {
  // Another writer holds an uncommitted conflicting row, as a transaction that skipped the access lock
  // would (an old replica, a manual fix): the guard's read cannot see it, so the insert meets the
  // unique index, waits for that writer, and must then fail with the rule's coded error (or succeed
  // when the other writer rolls back) — never STORAGE_ERROR.
  async function race(options: { setup: AccessChange[]; raw: Array<[string, unknown[]]>; changes: AccessChange[]; end: 'COMMIT' | 'ROLLBACK' }): Promise<{ outcome: unknown; repo: MetadataRepository; done: () => Promise<void> }> {
    const schema = await createTestSchema();
    const repo = await openPgRepository({ url: schema.url, max: 4 });
    const raw = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.schema}` });
    const done = async () => {
      await raw.end().catch(() => {});
      await repo.close();
      await schema.drop();
    };
    try {
      await repo.access.applyAccessChanges(options.setup);
      await raw.connect();
      const pid = (await raw.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await raw.query('BEGIN');
      for (const [sql, params] of options.raw) await raw.query(sql, params);
      const pending = repo.access.applyAccessChanges(options.changes).then(
        () => 'ok',
        (error: unknown) => error,
      );
      // Until the repository's insert waits on the raw writer's row.
      const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await admin.connect();
      try {
        for (let tries = 0; ; tries += 1) {
          const { rows } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid]);
          if (rows.length > 0) break;
          if (tries > 500) throw new Error('the repository never waited on the other writer');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } finally {
        await admin.end();
      }
      await raw.query(options.end);
      return { outcome: await pending, repo, done };
    } catch (error) {
      await done();
      throw error;
    }
  }

  const strataCode = (outcome: unknown) => (outcome instanceof StrataError ? { code: outcome.code, details: outcome.details } : outcome);

  it('identity_links: IDENTITY_LINK_TAKEN after the other first sign-in commits; linked when it rolls back', async () => {
    for (const end of ['COMMIT', 'ROLLBACK'] as const) {
      const { outcome, repo, done } = await race({
        setup: createPeople(1, 2),
        raw: [['INSERT INTO identity_links (issuer, subject, identity_id, created_at) VALUES ($1, $2, $3, $4)', ['https://id.example', 'ada', person(1).identityId, at(1)]]],
        changes: [{ kind: 'linkIdentity', link: { issuer: 'https://id.example', subject: 'ada', identityId: person(2).identityId, createdAt: at(2) } }],
        end,
      });
      try {
        if (end === 'COMMIT') {
          expect(strataCode(outcome)).toStrictEqual({ code: 'IDENTITY_LINK_TAKEN', details: { issuer: 'https://id.example' } });
          expect(await repo.access.findLinkedIdentity('https://id.example', 'ada')).toBe(person(1).identityId);
        } else {
          expect(outcome).toBe('ok');
          expect(await repo.access.findLinkedIdentity('https://id.example', 'ada')).toBe(person(2).identityId);
        }
      } finally {
        await done();
      }
    }
  });

  it('sso_domains_verified: SSO_DOMAIN_TAKEN naming the domain', async () => {
    const [a, b] = [connection(1), connection(2)];
    const { outcome, repo, done } = await race({
      setup: [...withOrg, { kind: 'putSsoConnection', connection: a }, { kind: 'putSsoConnection', connection: b }],
      raw: [['INSERT INTO sso_domains (connection_id, domain, verification_token, verified_at) VALUES ($1, $2, $3, $4)', [a.connectionId, 'lab.example', 't', at(1)]]],
      changes: [
        { kind: 'requireDomainUnclaimed', domain: 'lab.example', connectionId: b.connectionId },
        { kind: 'putSsoConnection', connection: { ...b, domains: [{ domain: 'ok.example', verificationToken: 'u', verifiedAt: at(2) }, { domain: 'lab.example', verificationToken: 'u', verifiedAt: at(2) }] } },
      ],
      end: 'COMMIT',
    });
    try {
      expect(strataCode(outcome)).toStrictEqual({ code: 'SSO_DOMAIN_TAKEN', details: { domain: 'lab.example' } });
      expect((await repo.access.getSsoConnection(b.connectionId))?.domains).toStrictEqual([]);
      expect((await repo.access.findSsoConnectionForDomain('ok.example'))).toBeNull();
    } finally {
      await done();
    }
  });

  it('scim_users_by_name: SCIM_USERNAME_TAKEN', async () => {
    const { outcome, repo, done } = await race({
      setup: [...withOrg, ...createPeople(1, 2)],
      raw: [
        [
          'INSERT INTO scim_users (org_id, identity_id, user_name, user_name_key, external_id, active, attributes, created_at, updated_at, version) VALUES ($1, $2, $3, $4, NULL, 1, $5, $6, $6, 1)',
          [ORG, person(1).identityId, 'Ada', 'ada', '{}', at(1)],
        ],
      ],
      changes: [{ kind: 'putScimUser', user: scimUser(2, 'ADA') }],
      end: 'COMMIT',
    });
    try {
      expect(strataCode(outcome)).toStrictEqual({ code: 'SCIM_USERNAME_TAKEN', details: { userName: 'ADA' } });
      expect(await repo.access.getScimUser(ORG, person(2).identityId)).toBeNull();
    } finally {
      await done();
    }
  });

  it('scim_groups_by_name: SCIM_GROUP_NAME_TAKEN', async () => {
    const { outcome, repo, done } = await race({
      setup: withOrg,
      raw: [
        [
          'INSERT INTO scim_groups (org_id, group_id, display_name, display_name_key, external_id, created_at, updated_at, version) VALUES ($1, $2, $3, $4, NULL, $5, $5, 1)',
          [ORG, scimGroup(1, '', []).groupId, 'Ops', 'ops', at(1)],
        ],
      ],
      changes: [{ kind: 'putScimGroup', group: scimGroup(2, 'OPS', []) }],
      end: 'COMMIT',
    });
    try {
      expect(strataCode(outcome)).toStrictEqual({ code: 'SCIM_GROUP_NAME_TAKEN', details: { displayName: 'OPS' } });
      expect((await repo.access.listScimGroups(ORG)).map((g) => g.displayName)).toStrictEqual(['Ops']);
    } finally {
      await done();
    }
  });
});

describe('postgres specifics of access', () => {
  it('a touch that does not move lastUsedAt forward writes no new row version', async () => {
    const schema = await createTestSchema();
    try {
      const repo = await openPgRepository({ url: schema.url, max: 2 });
      try {
        await repo.access.createApiKey(apiKey(1));
        const xmin = async () => (await repo.db.one<{ xmin: string }>('SELECT xmin FROM api_keys WHERE key_id = $1', [apiKey(1).keyId]))!.xmin;
        await repo.access.touchApiKey(apiKey(1).keyId, at(10));
        const touched = await xmin();
        await repo.access.touchApiKey(apiKey(1).keyId, at(10));
        await repo.access.touchApiKey(apiKey(1).keyId, at(9));
        expect(await xmin()).toBe(touched);
        await repo.access.touchApiKey(apiKey(1).keyId, at(11));
        expect(await xmin()).not.toBe(touched);
      } finally {
        await repo.close();
      }
    } finally {
      await schema.drop();
    }
  });

  it('refuses to store text holding NUL as INVALID_ARGUMENT, writing nothing (Postgres text cannot hold it)', async () => {
    const schema = await createTestSchema();
    try {
      const repo = await openPgRepository({ url: schema.url, max: 2 });
      try {
        const error = await expectStrataError(
          repo.access.applyAccessChanges([
            { kind: 'createApiKey', key: apiKey(1) },
            { kind: 'createIdentity', identity: { ...person(1), name: 'a\u0000b' } },
          ]),
          'INVALID_ARGUMENT',
        );
        expect(error.details).toStrictEqual({ reason: 'contains NUL' });
        expect(await repo.access.getApiKey(apiKey(1).keyId)).toBeNull();
        await expectStrataError(repo.access.appendAudit({ ...audit(1), target: '\u0000' }), 'INVALID_ARGUMENT');
        await expectStrataError(repo.access.createIdentity({ ...person(1), email: '\u0000' }), 'INVALID_ARGUMENT');
        // JSON columns escape it: preferences keep it.
        await repo.access.createIdentity(person(1));
        await repo.access.applyAccessChanges([{ kind: 'setPreferences', identityId: person(1).identityId, preferences: { k: '\u0000' } }]);
        expect(await repo.access.getPreferences(person(1).identityId)).toStrictEqual({ k: '\u0000' });
      } finally {
        await repo.close();
      }
    } finally {
      await schema.drop();
    }
  });
});
