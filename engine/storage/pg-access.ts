// Organizations, identities, memberships and applyAccessChanges on Postgres (sqlite-access.ts is the
// SQLite twin); keys and audit, sign-in links, SSO and SCIM live in pg-api-keys.ts, pg-identity-links.ts,
// pg-sso.ts and pg-scim.ts, composed here.
//
// Serialization: SQLite has one writer, so a guard (`require…`) and the writes after it can never
// interleave with another access change. Here every access write, applyAccessChanges and the single
// writes alike, runs in a transaction holding the access advisory lock (pg-db.ts), which gives the same
// order across replicas. Two exceptions, both read by no guard: touchApiKey (every request) and
// appendAudit. Where a unique index backs a rule (identity links, verified domains, SCIM names) the
// write also maps its violation to the rule's coded error, so the rule holds even for a writer that
// did not take the lock.
//
// NUL: Postgres text cannot hold U+0000 (SQLite's can). A lookup by a key containing one finds nothing
// (what SQLite answers for any key never stored) instead of failing; a write containing one is refused
// as INVALID_ARGUMENT instead of a STORAGE_ERROR. The engine refuses control characters in the names
// it stores, so only unvalidated external identifiers (an OIDC subject, a SCIM filter) can bring one.

import pg from 'pg';
import { StrataError } from '../errors.js';
import type { AccessChange, AccessRepository } from '../ports/metadata-repository.js';
import type { Identity, IdentityKind, OrgMembership, OrgRole, Organization, ProjectAccess, ProjectMembership } from '../types.js';
import { createPgApiKeys } from './pg-api-keys.js';
import type { PgDatabase, Tx } from './pg-db.js';
import { createPgIdentityLinks } from './pg-identity-links.js';
import { createPgScim } from './pg-scim.js';
import { createPgSso } from './pg-sso.js';
import { type IdentityRow, type MemberRow, type OrgRow, type ProjectMemberRow, toMember, toOrg, toProjectMember } from './sqlite-access.js';

const toIdentity = (row: IdentityRow): Identity => ({
  identityId: row.identity_id,
  kind: row.kind as IdentityKind,
  name: row.name,
  email: row.email,
  createdAt: row.created_at,
});

const hasNul = (values: readonly unknown[]): boolean => values.some((value) => typeof value === 'string' && value.includes('\0'));

/** A read whose string arguments may hold NUL: then it answers `absent` without asking Postgres. */
function orAbsent<A extends unknown[], R>(read: (...args: A) => Promise<R>, absent: () => NoInfer<R>): (...args: A) => Promise<R> {
  return (...args) => (hasNul(args) ? Promise.resolve(absent()) : read(...args));
}

/** SQLSTATE 22021 from a JS string can only be a NUL (pg encodes lone surrogates as U+FFFD). */
function refuseNul(error: unknown): unknown {
  const cause = error instanceof StrataError ? error.cause : error;
  if (cause instanceof pg.DatabaseError && cause.code === '22021') {
    return new StrataError('INVALID_ARGUMENT', { message: 'A value contains a NUL character', details: { reason: 'contains NUL' }, cause });
  }
  return error;
}

export function createPgAccess(db: PgDatabase): AccessRepository {
  const keys = createPgApiKeys(db);
  const links = createPgIdentityLinks(db);
  const sso = createPgSso(db);
  const scim = createPgScim(db);

  /** One access write: a transaction under the access lock (see the top of this file). */
  const write = async (fn: (tx: Tx) => Promise<void>): Promise<void> => {
    try {
      await db.tx(fn, { access: true });
    } catch (error) {
      throw refuseNul(error);
    }
  };

  const writeOrg = async (tx: Tx, org: Organization): Promise<void> => {
    await tx.query('INSERT INTO organizations (org_id, name, created_at) VALUES ($1, $2, $3)', [org.orgId, org.name, org.createdAt]);
  };
  const writeIdentity = async (tx: Tx, identity: Identity): Promise<void> => {
    await tx.query('INSERT INTO identities (identity_id, kind, name, email, created_at) VALUES ($1, $2, $3, $4, $5)', [
      identity.identityId,
      identity.kind,
      identity.name,
      identity.email,
      identity.createdAt,
    ]);
  };
  const writeOrgRole = async (tx: Tx, m: OrgMembership): Promise<void> => {
    await tx.query(
      'INSERT INTO org_members (org_id, identity_id, role) VALUES ($1, $2, $3) ON CONFLICT (org_id, identity_id) DO UPDATE SET role = excluded.role',
      [m.orgId, m.identityId, m.role],
    );
  };
  const deleteOrgMember = async (tx: Tx, orgId: string, identityId: string): Promise<void> => {
    await tx.query('DELETE FROM org_members WHERE org_id = $1 AND identity_id = $2', [orgId, identityId]);
  };
  const writeProjectAccess = async (tx: Tx, m: ProjectMembership): Promise<void> => {
    await tx.query(
      'INSERT INTO project_members (project_id, identity_id, access) VALUES ($1, $2, $3) ON CONFLICT (project_id, identity_id) DO UPDATE SET access = excluded.access',
      [m.projectId, m.identityId, m.access],
    );
  };
  const deleteProjectMember = async (tx: Tx, projectId: string, identityId: string): Promise<void> => {
    await tx.query('DELETE FROM project_members WHERE project_id = $1 AND identity_id = $2', [projectId, identityId]);
  };

  const applyOne = async (tx: Tx, change: AccessChange): Promise<void> => {
    switch (change.kind) {
      case 'createOrganization':
        return writeOrg(tx, change.org);
      case 'createIdentity':
        return writeIdentity(tx, change.identity);
      case 'setOrgRole':
        return writeOrgRole(tx, change.membership);
      case 'removeOrgMember':
        return deleteOrgMember(tx, change.orgId, change.identityId);
      case 'setProjectAccess':
        return writeProjectAccess(tx, change.membership);
      case 'removeProjectMember':
        return deleteProjectMember(tx, change.projectId, change.identityId);
      case 'createApiKey':
        return keys.writes.insertKey(tx, change.key);
      case 'updateApiKey':
        return keys.writes.updateKey(tx, change.keyId, change.patch);
      case 'appendAudit':
        return keys.writes.insertAudit(tx, change.record);
      case 'linkIdentity':
        return links.writes.insertLink(tx, change.link);
      case 'setPreferences':
        return links.writes.writePreferences(tx, change.identityId, change.preferences);
      case 'putSsoConnection':
        return sso.writes.putConnection(tx, change.connection);
      case 'requireDomainUnclaimed':
        return sso.writes.requireDomainUnclaimed(tx, change.domain, change.connectionId);
      case 'requireIssuerUnclaimed':
        return sso.writes.requireIssuerUnclaimed(tx, change.issuer, change.connectionId);
      case 'setIdentityProfile':
        await tx.query('UPDATE identities SET name = $1, email = $2 WHERE identity_id = $3', [change.name, change.email, change.identityId]);
        return;
      case 'createWebSession':
        return links.writes.insertSession(tx, change.session);
      case 'revokeWebSessions':
        return links.writes.revokeSessions(tx, change.at, {
          ...(change.sessionHmac === undefined ? {} : { sessionHmac: change.sessionHmac }),
          ...(change.identityId === undefined ? {} : { identityId: change.identityId }),
          ...(change.orgId === undefined ? {} : { orgId: change.orgId }),
        });
      case 'putScimConfig':
        return scim.writes.putConfig(tx, change.config);
      case 'putScimUser':
        return scim.writes.putUser(tx, change.user);
      case 'deleteScimUser':
        return scim.writes.deleteUser(tx, change.orgId, change.identityId);
      case 'putScimGroup':
        return scim.writes.putGroup(tx, change.group);
      case 'deleteScimGroup':
        return scim.writes.deleteGroup(tx, change.orgId, change.groupId);
      case 'requireScimVersion':
        return scim.writes.requireVersion(tx, change.orgId, change.resource, change.id, change.version);
      case 'requireAnotherOwner': {
        // No index can say "some other owner remains": this guard is as good as the access lock, which
        // orders it after every other change to org_members (all of them take the lock).
        const other = await tx.one("SELECT 1 FROM org_members WHERE org_id = $1 AND role = 'owner' AND identity_id <> $2 LIMIT 1", [change.orgId, change.identityId]);
        if (other === undefined) throw new StrataError('MEMBERSHIP_LAST_OWNER', { details: { orgId: change.orgId, identityId: change.identityId } });
        return;
      }
      case 'requireKeyActive': {
        // FOR UPDATE: the key stays as checked until this transaction's update of it commits.
        const key = await keys.writes.getKey(tx, change.keyId, true);
        if (key === null) throw new StrataError('KEY_NOT_FOUND', { details: { keyId: change.keyId } });
        if (key.revokedAt !== null) throw new StrataError('KEY_REVOKED', { details: { keyId: change.keyId } });
        if (key.replacedBy !== null && change.allowReplaced !== true) throw new StrataError('KEY_ROTATED', { details: { keyId: change.keyId, replacedBy: key.replacedBy } });
        return;
      }
      case 'requireNoOrganization':
        if ((await tx.one('SELECT 1 FROM organizations LIMIT 1')) !== undefined) throw new StrataError('ALREADY_BOOTSTRAPPED');
        return;
    }
  };

  const none = () => null;
  const empty = <T>(): T[] => [];

  return {
    createOrganization: (org) => write((tx) => writeOrg(tx, org)),
    getOrganization: orAbsent(async (orgId) => {
      const row = await db.one<OrgRow>('SELECT * FROM organizations WHERE org_id = $1', [orgId]);
      return row === undefined ? null : toOrg(row);
    }, none),
    listOrganizations: async () => (await db.query<OrgRow>('SELECT * FROM organizations ORDER BY name, org_id')).map(toOrg),

    createIdentity: (identity) => write((tx) => writeIdentity(tx, identity)),
    getIdentity: orAbsent(async (identityId) => {
      const row = await db.one<IdentityRow>('SELECT * FROM identities WHERE identity_id = $1', [identityId]);
      return row === undefined ? null : toIdentity(row);
    }, none),

    setOrgRole: (m) => write((tx) => writeOrgRole(tx, m)),
    removeOrgMember: (orgId, identityId) => write((tx) => deleteOrgMember(tx, orgId, identityId)),
    getOrgRole: orAbsent(
      async (orgId, identityId) =>
        (await db.one<{ role: OrgRole }>('SELECT role FROM org_members WHERE org_id = $1 AND identity_id = $2', [orgId, identityId]))?.role ?? null,
      none,
    ),
    listOrgMembers: orAbsent(async (orgId) => (await db.query<MemberRow>('SELECT * FROM org_members WHERE org_id = $1 ORDER BY identity_id', [orgId])).map(toMember), empty),
    listOrgsOf: orAbsent(async (identityId) => (await db.query<MemberRow>('SELECT * FROM org_members WHERE identity_id = $1 ORDER BY org_id', [identityId])).map(toMember), empty),

    setProjectAccess: (m) => write((tx) => writeProjectAccess(tx, m)),
    removeProjectMember: (projectId, identityId) => write((tx) => deleteProjectMember(tx, projectId, identityId)),
    getProjectAccess: orAbsent(
      async (projectId, identityId) =>
        (await db.one<{ access: ProjectAccess }>('SELECT access FROM project_members WHERE project_id = $1 AND identity_id = $2', [projectId, identityId]))?.access ?? null,
      none,
    ),
    listProjectMembers: orAbsent(
      async (projectId) => (await db.query<ProjectMemberRow>('SELECT * FROM project_members WHERE project_id = $1 ORDER BY identity_id', [projectId])).map(toProjectMember),
      empty,
    ),
    listProjectMembershipsOf: orAbsent(
      async (identityId) => (await db.query<ProjectMemberRow>('SELECT * FROM project_members WHERE identity_id = $1 ORDER BY project_id', [identityId])).map(toProjectMember),
      empty,
    ),

    findLinkedIdentity: orAbsent(links.reads.findLinkedIdentity, none),
    getPreferences: orAbsent(links.reads.getPreferences, () => ({})),
    getWebSession: orAbsent(links.reads.getWebSession, none),

    getSsoConnection: orAbsent(sso.reads.getSsoConnection, none),
    listSsoConnections: orAbsent(sso.reads.listSsoConnections, empty),
    findSsoConnectionForDomain: orAbsent(sso.reads.findSsoConnectionForDomain, none),
    findActiveSsoConnection: orAbsent(sso.reads.findActiveSsoConnection, none),

    getScimConfig: orAbsent(scim.reads.getScimConfig, none),
    getScimConfigByToken: orAbsent(scim.reads.getScimConfigByToken, none),
    getScimUser: orAbsent(scim.reads.getScimUser, none),
    findScimUserByUserName: orAbsent(scim.reads.findScimUserByUserName, none),
    listScimUsers: orAbsent(scim.reads.listScimUsers, empty),
    getScimGroup: orAbsent(scim.reads.getScimGroup, none),
    listScimGroups: orAbsent(scim.reads.listScimGroups, empty),
    listScimGroupsOf: orAbsent(scim.reads.listScimGroupsOf, empty),

    createApiKey: (key) => write((tx) => keys.writes.insertKey(tx, key)),
    getApiKey: orAbsent(keys.reads.getApiKey, none),
    listApiKeys: orAbsent(keys.reads.listApiKeys, empty),
    updateApiKey: (keyId, patch) => write((tx) => keys.writes.updateKey(tx, keyId, patch)),
    // A key id with NUL names no key: nothing to touch.
    touchApiKey: orAbsent(keys.reads.touchApiKey, () => undefined),
    appendAudit: (record) => keys.reads.appendAudit(record).catch((error: unknown) => Promise.reject(refuseNul(error))),
    listAudit: keys.reads.listAudit,

    applyAccessChanges: (changes) =>
      write(async (tx) => {
        for (const change of changes) await applyOne(tx, change);
      }),
  };
}
