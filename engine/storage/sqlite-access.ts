import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { AccessChange, AccessRepository } from '../ports/metadata-repository.js';
import type {
  Identity,
  IdentityKind,
  OrgMembership,
  OrgRole,
  Organization,
  ProjectAccess,
  ProjectMembership,
} from '../types.js';
import { createSqliteApiKeys } from './sqlite-api-keys.js';
import { createSqliteIdentityLinks } from './sqlite-identity-links.js';
import { createSqliteScim } from './sqlite-scim.js';
import { createSqliteSso } from './sqlite-sso.js';
import { run } from './sqlite-rows.js';

export interface OrgRow {
  org_id: string;
  name: string;
  created_at: string;
}

export interface IdentityRow {
  identity_id: string;
  kind: string;
  name: string;
  email: string | null;
  created_at: string;
}

export interface MemberRow {
  org_id: string;
  identity_id: string;
  role: string;
}

export interface ProjectMemberRow {
  project_id: string;
  identity_id: string;
  access: string;
}

export const toOrg = (row: OrgRow): Organization => ({ orgId: row.org_id, name: row.name, createdAt: row.created_at });
export const toMember = (row: MemberRow): OrgMembership => ({
  orgId: row.org_id,
  identityId: row.identity_id,
  role: row.role as OrgRole,
});
export const toProjectMember = (row: ProjectMemberRow): ProjectMembership => ({
  projectId: row.project_id,
  identityId: row.identity_id,
  access: row.access as ProjectAccess,
});

export function createSqliteAccess(db: Database): AccessRepository {
  const insertOrg = db.prepare('INSERT INTO organizations (org_id, name, created_at) VALUES (?, ?, ?)');
  const orgById = db.prepare('SELECT * FROM organizations WHERE org_id = ?');
  const allOrgs = db.prepare('SELECT * FROM organizations ORDER BY name, org_id');
  const insertIdentity = db.prepare(
    'INSERT INTO identities (identity_id, kind, name, email, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const identityById = db.prepare('SELECT * FROM identities WHERE identity_id = ?');
  const updateProfile = db.prepare('UPDATE identities SET name = ?, email = ? WHERE identity_id = ?');
  const upsertOrgRole = db.prepare(
    'INSERT INTO org_members (org_id, identity_id, role) VALUES (?, ?, ?) ON CONFLICT (org_id, identity_id) DO UPDATE SET role = excluded.role',
  );
  const deleteOrgMember = db.prepare('DELETE FROM org_members WHERE org_id = ? AND identity_id = ?');
  const orgRole = db.prepare('SELECT role FROM org_members WHERE org_id = ? AND identity_id = ?').pluck();
  const orgMembers = db.prepare('SELECT * FROM org_members WHERE org_id = ? ORDER BY identity_id');
  const orgsOf = db.prepare('SELECT * FROM org_members WHERE identity_id = ? ORDER BY org_id');
  const upsertProjectAccess = db.prepare(
    'INSERT INTO project_members (project_id, identity_id, access) VALUES (?, ?, ?) ON CONFLICT (project_id, identity_id) DO UPDATE SET access = excluded.access',
  );
  const deleteProjectMember = db.prepare('DELETE FROM project_members WHERE project_id = ? AND identity_id = ?');
  const projectAccess = db.prepare('SELECT access FROM project_members WHERE project_id = ? AND identity_id = ?').pluck();
  const projectMembers = db.prepare('SELECT * FROM project_members WHERE project_id = ? ORDER BY identity_id');
  const membershipsOf = db.prepare('SELECT * FROM project_members WHERE identity_id = ? ORDER BY project_id');

  const countOrgs = db.prepare('SELECT count(*) FROM organizations').pluck();
  const otherOwner = db
    .prepare("SELECT 1 FROM org_members WHERE org_id = ? AND role = 'owner' AND identity_id <> ? LIMIT 1")
    .pluck();

  const writeOrg = (org: Organization): void => {
    insertOrg.run(org.orgId, org.name, org.createdAt);
  };
  const writeIdentity = (identity: Identity): void => {
    insertIdentity.run(identity.identityId, identity.kind, identity.name, identity.email, identity.createdAt);
  };
  const writeOrgRole = (m: OrgMembership): void => {
    upsertOrgRole.run(m.orgId, m.identityId, m.role);
  };
  const writeProjectAccess = (m: ProjectMembership): void => {
    upsertProjectAccess.run(m.projectId, m.identityId, m.access);
  };
  const keys = createSqliteApiKeys(db);
  const links = createSqliteIdentityLinks(db);
  const sso = createSqliteSso(db);
  const scim = createSqliteScim(db);

  const applyOne = (change: AccessChange): void => {
    switch (change.kind) {
      case 'createOrganization':
        writeOrg(change.org);
        return;
      case 'createIdentity':
        writeIdentity(change.identity);
        return;
      case 'setOrgRole':
        writeOrgRole(change.membership);
        return;
      case 'removeOrgMember':
        deleteOrgMember.run(change.orgId, change.identityId);
        return;
      case 'setProjectAccess':
        writeProjectAccess(change.membership);
        return;
      case 'removeProjectMember':
        deleteProjectMember.run(change.projectId, change.identityId);
        return;
      case 'createApiKey':
        keys.writes.insertKey(change.key);
        return;
      case 'updateApiKey':
        keys.writes.updateKey(change.keyId, change.patch);
        return;
      case 'appendAudit':
        keys.writes.insertAudit(change.record);
        return;
      case 'linkIdentity':
        links.writes.insertLink(change.link);
        return;
      case 'setPreferences':
        links.writes.writePreferences(change.identityId, change.preferences);
        return;
      case 'putSsoConnection':
        sso.writes.putConnection(change.connection);
        return;
      case 'requireDomainUnclaimed':
        sso.writes.requireDomainUnclaimed(change.domain, change.connectionId);
        return;
      case 'requireIssuerUnclaimed':
        sso.writes.requireIssuerUnclaimed(change.issuer, change.connectionId);
        return;
      case 'setIdentityProfile':
        updateProfile.run(change.name, change.email, change.identityId);
        return;
      case 'createWebSession':
        links.writes.insertSession(change.session);
        return;
      case 'revokeWebSessions':
        links.writes.revokeSessions(change.at, {
          ...(change.sessionHmac === undefined ? {} : { sessionHmac: change.sessionHmac }),
          ...(change.identityId === undefined ? {} : { identityId: change.identityId }),
          ...(change.orgId === undefined ? {} : { orgId: change.orgId }),
        });
        return;
      case 'putScimConfig':
        scim.writes.putConfig(change.config);
        return;
      case 'putScimUser':
        scim.writes.putUser(change.user);
        return;
      case 'deleteScimUser':
        scim.writes.deleteUser(change.orgId, change.identityId);
        return;
      case 'putScimGroup':
        scim.writes.putGroup(change.group);
        return;
      case 'deleteScimGroup':
        scim.writes.deleteGroup(change.orgId, change.groupId);
        return;
      case 'requireScimVersion':
        scim.writes.requireVersion(change.orgId, change.resource, change.id, change.version);
        return;
      case 'requireAnotherOwner':
        if (otherOwner.get(change.orgId, change.identityId) === undefined) {
          throw new StrataError('MEMBERSHIP_LAST_OWNER', { details: { orgId: change.orgId, identityId: change.identityId } });
        }
        return;
      case 'requireKeyActive': {
        const key = keys.writes.getKey(change.keyId);
        if (key === null) throw new StrataError('KEY_NOT_FOUND', { details: { keyId: change.keyId } });
        if (key.revokedAt !== null) throw new StrataError('KEY_REVOKED', { details: { keyId: change.keyId } });
        if (key.replacedBy !== null && change.allowReplaced !== true) throw new StrataError('KEY_ROTATED', { details: { keyId: change.keyId, replacedBy: key.replacedBy } });
        return;
      }
      case 'requireNoOrganization':
        if ((countOrgs.get() as number) > 0) throw new StrataError('ALREADY_BOOTSTRAPPED');
        return;
    }
  };
  // IMMEDIATE: the write lock is taken before the guards read, so two requests racing on the same
  // rows (two owners demoting each other, two rotations of one key) are serialized, not both admitted.
  const applyAll = db.transaction((changes: readonly AccessChange[]) => {
    for (const change of changes) applyOne(change);
  });

  return {
    createOrganization: (org) => run(() => writeOrg(org)),
    getOrganization: (orgId) =>
      run(() => {
        const row = orgById.get(orgId) as OrgRow | undefined;
        return row === undefined ? null : toOrg(row);
      }),
    listOrganizations: () => run(() => (allOrgs.all() as OrgRow[]).map(toOrg)),

    createIdentity: (identity) => run(() => writeIdentity(identity)),
    getIdentity: (identityId) =>
      run((): Identity | null => {
        const row = identityById.get(identityId) as IdentityRow | undefined;
        if (row === undefined) return null;
        return {
          identityId: row.identity_id,
          kind: row.kind as IdentityKind,
          name: row.name,
          email: row.email,
          createdAt: row.created_at,
        };
      }),

    setOrgRole: (m) => run(() => writeOrgRole(m)),
    removeOrgMember: (orgId, identityId) =>
      run(() => {
        deleteOrgMember.run(orgId, identityId);
      }),
    getOrgRole: (orgId, identityId) => run(() => (orgRole.get(orgId, identityId) as OrgRole | undefined) ?? null),
    listOrgMembers: (orgId) => run(() => (orgMembers.all(orgId) as MemberRow[]).map(toMember)),
    listOrgsOf: (identityId) => run(() => (orgsOf.all(identityId) as MemberRow[]).map(toMember)),

    setProjectAccess: (m) => run(() => writeProjectAccess(m)),
    removeProjectMember: (projectId, identityId) =>
      run(() => {
        deleteProjectMember.run(projectId, identityId);
      }),
    getProjectAccess: (projectId, identityId) =>
      run(() => (projectAccess.get(projectId, identityId) as ProjectAccess | undefined) ?? null),
    listProjectMembers: (projectId) =>
      run(() => (projectMembers.all(projectId) as ProjectMemberRow[]).map(toProjectMember)),
    listProjectMembershipsOf: (identityId) => run(() => (membershipsOf.all(identityId) as ProjectMemberRow[]).map(toProjectMember)),

    ...keys.methods,
    ...links.methods,
    ...sso.methods,
    ...scim.methods,
    applyAccessChanges: (changes) => run(() => applyAll.immediate(changes)),
  };
}
