import type { Database } from 'better-sqlite3';
import type { AccessRepository } from '../ports/metadata-repository.js';
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
import { run } from './sqlite-rows.js';

interface OrgRow {
  org_id: string;
  name: string;
  created_at: string;
}

interface IdentityRow {
  identity_id: string;
  kind: string;
  name: string;
  email: string | null;
  created_at: string;
}

interface MemberRow {
  org_id: string;
  identity_id: string;
  role: string;
}

interface ProjectMemberRow {
  project_id: string;
  identity_id: string;
  access: string;
}

const toOrg = (row: OrgRow): Organization => ({ orgId: row.org_id, name: row.name, createdAt: row.created_at });
const toMember = (row: MemberRow): OrgMembership => ({
  orgId: row.org_id,
  identityId: row.identity_id,
  role: row.role as OrgRole,
});
const toProjectMember = (row: ProjectMemberRow): ProjectMembership => ({
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

  return {
    createOrganization: (org) =>
      run(() => {
        insertOrg.run(org.orgId, org.name, org.createdAt);
      }),
    getOrganization: (orgId) =>
      run(() => {
        const row = orgById.get(orgId) as OrgRow | undefined;
        return row === undefined ? null : toOrg(row);
      }),
    listOrganizations: () => run(() => (allOrgs.all() as OrgRow[]).map(toOrg)),

    createIdentity: (identity) =>
      run(() => {
        insertIdentity.run(identity.identityId, identity.kind, identity.name, identity.email, identity.createdAt);
      }),
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

    setOrgRole: (m) =>
      run(() => {
        upsertOrgRole.run(m.orgId, m.identityId, m.role);
      }),
    removeOrgMember: (orgId, identityId) =>
      run(() => {
        deleteOrgMember.run(orgId, identityId);
      }),
    getOrgRole: (orgId, identityId) => run(() => (orgRole.get(orgId, identityId) as OrgRole | undefined) ?? null),
    listOrgMembers: (orgId) => run(() => (orgMembers.all(orgId) as MemberRow[]).map(toMember)),
    listOrgsOf: (identityId) => run(() => (orgsOf.all(identityId) as MemberRow[]).map(toMember)),

    setProjectAccess: (m) =>
      run(() => {
        upsertProjectAccess.run(m.projectId, m.identityId, m.access);
      }),
    removeProjectMember: (projectId, identityId) =>
      run(() => {
        deleteProjectMember.run(projectId, identityId);
      }),
    getProjectAccess: (projectId, identityId) =>
      run(() => (projectAccess.get(projectId, identityId) as ProjectAccess | undefined) ?? null),
    listProjectMembers: (projectId) =>
      run(() => (projectMembers.all(projectId) as ProjectMemberRow[]).map(toProjectMember)),

    ...createSqliteApiKeys(db),
  };
}
