// SCIM provisioning (issue 16): each organization's token and role mapping, and the users and groups
// its directory provisioned. userName and displayName are unique per organization, case-insensitively.

import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { ScimConfig, ScimGroup, ScimUser } from '../types.js';
import { run } from './sqlite-rows.js';

export interface ConfigRow {
  org_id: string;
  token_id: string;
  secret_hmac: string;
  created_at: string;
  default_role: string;
  group_roles: string;
}

export interface UserRow {
  org_id: string;
  identity_id: string;
  user_name: string;
  external_id: string | null;
  active: number;
  attributes: string;
  created_at: string;
  updated_at: string;
  version: number;
}

export interface GroupRow {
  org_id: string;
  group_id: string;
  display_name: string;
  external_id: string | null;
  created_at: string;
  updated_at: string;
  version: number;
}

type ScimMethods = Pick<
  AccessRepository,
  'getScimConfig' | 'getScimConfigByToken' | 'getScimUser' | 'findScimUserByUserName' | 'listScimUsers' | 'getScimGroup' | 'listScimGroups' | 'listScimGroupsOf'
>;

export interface ScimWrites {
  putConfig(config: ScimConfig): void;
  putUser(user: ScimUser): void;
  deleteUser(orgId: string, identityId: string): void;
  putGroup(group: ScimGroup): void;
  deleteGroup(orgId: string, groupId: string): void;
  requireVersion(orgId: string, resource: 'user' | 'group', id: string, version: number): void;
}

/** The case-insensitive key of a userName or displayName. */
export const keyOf = (name: string): string => name.normalize('NFC').toLowerCase();

export const toConfig = (row: ConfigRow): ScimConfig => ({
  orgId: row.org_id,
  tokenId: row.token_id,
  secretHmac: row.secret_hmac,
  createdAt: row.created_at,
  defaultRole: row.default_role as ScimConfig['defaultRole'],
  groupRoles: JSON.parse(row.group_roles) as ScimConfig['groupRoles'],
});

export const toUser = (row: UserRow): ScimUser => ({
  orgId: row.org_id,
  identityId: row.identity_id,
  userName: row.user_name,
  externalId: row.external_id,
  active: row.active === 1,
  attributes: JSON.parse(row.attributes) as Record<string, unknown>,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  version: row.version,
});

export function createSqliteScim(db: Database): { methods: ScimMethods; writes: ScimWrites } {
  const configOf = db.prepare('SELECT * FROM scim_configs WHERE org_id = ?');
  const configByToken = db.prepare('SELECT * FROM scim_configs WHERE token_id = ?');
  const upsertConfig = db.prepare(
    `INSERT INTO scim_configs (org_id, token_id, secret_hmac, created_at, default_role, group_roles) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (org_id) DO UPDATE SET token_id = excluded.token_id, secret_hmac = excluded.secret_hmac, created_at = excluded.created_at,
       default_role = excluded.default_role, group_roles = excluded.group_roles`,
  );
  const userById = db.prepare('SELECT * FROM scim_users WHERE org_id = ? AND identity_id = ?');
  const userByName = db.prepare('SELECT * FROM scim_users WHERE org_id = ? AND user_name_key = ?');
  const usersOf = db.prepare('SELECT * FROM scim_users WHERE org_id = ? ORDER BY created_at, identity_id');
  const upsertUser = db.prepare(
    `INSERT INTO scim_users (org_id, identity_id, user_name, user_name_key, external_id, active, attributes, created_at, updated_at, version)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (org_id, identity_id) DO UPDATE SET user_name = excluded.user_name, user_name_key = excluded.user_name_key,
       external_id = excluded.external_id, active = excluded.active, attributes = excluded.attributes, updated_at = excluded.updated_at,
       version = excluded.version`,
  );
  const userNameOwner = db.prepare('SELECT identity_id FROM scim_users WHERE org_id = ? AND user_name_key = ?').pluck();
  const deleteUserRow = db.prepare('DELETE FROM scim_users WHERE org_id = ? AND identity_id = ?');
  const deleteMembershipsOf = db.prepare('DELETE FROM scim_group_members WHERE org_id = ? AND identity_id = ?');
  const groupById = db.prepare('SELECT * FROM scim_groups WHERE org_id = ? AND group_id = ?');
  const groupsOfOrg = db.prepare('SELECT * FROM scim_groups WHERE org_id = ? ORDER BY created_at, group_id');
  const groupsOfIdentity = db.prepare(
    `SELECT g.* FROM scim_group_members m JOIN scim_groups g ON g.org_id = m.org_id AND g.group_id = m.group_id
     WHERE m.org_id = ? AND m.identity_id = ? ORDER BY g.display_name_key`,
  );
  const membersOf = db.prepare('SELECT identity_id FROM scim_group_members WHERE org_id = ? AND group_id = ? ORDER BY identity_id').pluck();
  const upsertGroup = db.prepare(
    `INSERT INTO scim_groups (org_id, group_id, display_name, display_name_key, external_id, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (org_id, group_id) DO UPDATE SET display_name = excluded.display_name, display_name_key = excluded.display_name_key,
       external_id = excluded.external_id, updated_at = excluded.updated_at, version = excluded.version`,
  );
  const groupNameOwner = db.prepare('SELECT group_id FROM scim_groups WHERE org_id = ? AND display_name_key = ?').pluck();
  const deleteMembers = db.prepare('DELETE FROM scim_group_members WHERE org_id = ? AND group_id = ?');
  const insertMember = db.prepare('INSERT OR IGNORE INTO scim_group_members (org_id, group_id, identity_id) VALUES (?, ?, ?)');
  const deleteGroupRow = db.prepare('DELETE FROM scim_groups WHERE org_id = ? AND group_id = ?');
  const userVersion = db.prepare('SELECT version FROM scim_users WHERE org_id = ? AND identity_id = ?').pluck();
  const groupVersion = db.prepare('SELECT version FROM scim_groups WHERE org_id = ? AND group_id = ?').pluck();

  const toGroup = (row: GroupRow): ScimGroup => ({
    orgId: row.org_id,
    groupId: row.group_id,
    displayName: row.display_name,
    externalId: row.external_id,
    members: membersOf.all(row.org_id, row.group_id) as string[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  });
  const one = <R, T>(row: unknown, to: (r: R) => T): T | null => (row === undefined ? null : to(row as R));

  return {
    methods: {
      getScimConfig: (orgId) => run(() => one(configOf.get(orgId), toConfig)),
      getScimConfigByToken: (tokenId) => run(() => one(configByToken.get(tokenId), toConfig)),
      getScimUser: (orgId, identityId) => run(() => one(userById.get(orgId, identityId), toUser)),
      findScimUserByUserName: (orgId, userName) => run(() => one(userByName.get(orgId, keyOf(userName)), toUser)),
      listScimUsers: (orgId) => run(() => (usersOf.all(orgId) as UserRow[]).map(toUser)),
      getScimGroup: (orgId, groupId) => run(() => one(groupById.get(orgId, groupId), toGroup)),
      listScimGroups: (orgId) => run(() => (groupsOfOrg.all(orgId) as GroupRow[]).map(toGroup)),
      listScimGroupsOf: (orgId, identityId) => run(() => (groupsOfIdentity.all(orgId, identityId) as GroupRow[]).map(toGroup)),
    },
    writes: {
      putConfig(c) {
        upsertConfig.run(c.orgId, c.tokenId, c.secretHmac, c.createdAt, c.defaultRole, JSON.stringify(c.groupRoles));
      },
      putUser(u) {
        const owner = userNameOwner.get(u.orgId, keyOf(u.userName)) as string | undefined;
        if (owner !== undefined && owner !== u.identityId) throw new StrataError('SCIM_USERNAME_TAKEN', { details: { userName: u.userName } });
        upsertUser.run(u.orgId, u.identityId, u.userName, keyOf(u.userName), u.externalId, u.active ? 1 : 0, JSON.stringify(u.attributes), u.createdAt, u.updatedAt, u.version);
      },
      deleteUser(orgId, identityId) {
        deleteUserRow.run(orgId, identityId);
        deleteMembershipsOf.run(orgId, identityId);
      },
      putGroup(g) {
        const owner = groupNameOwner.get(g.orgId, keyOf(g.displayName)) as string | undefined;
        if (owner !== undefined && owner !== g.groupId) throw new StrataError('SCIM_GROUP_NAME_TAKEN', { details: { displayName: g.displayName } });
        upsertGroup.run(g.orgId, g.groupId, g.displayName, keyOf(g.displayName), g.externalId, g.createdAt, g.updatedAt, g.version);
        deleteMembers.run(g.orgId, g.groupId);
        for (const member of g.members) insertMember.run(g.orgId, g.groupId, member);
      },
      deleteGroup(orgId, groupId) {
        deleteGroupRow.run(orgId, groupId);
        deleteMembers.run(orgId, groupId);
      },
      requireVersion(orgId, resource, id, version) {
        const current = (resource === 'user' ? userVersion.get(orgId, id) : groupVersion.get(orgId, id)) as number | undefined;
        if (current !== version) throw new StrataError('SCIM_VERSION_MISMATCH', { details: { resource, id } });
      },
    },
  };
}
