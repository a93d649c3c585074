// SCIM provisioning on Postgres (sqlite-scim.ts is the SQLite twin): each organization's token and role
// mapping, and the users and groups its directory provisioned. userName and displayName are unique per
// organization, case-insensitively, through a key column computed in JS by sqlite-scim.ts's keyOf, so
// both stores fold case identically (Postgres lower() follows the database's ctype; SQLite's folds
// ASCII only).

import { StrataError } from '../errors.js';
import type { AccessRepository } from '../ports/metadata-repository.js';
import type { ScimConfig, ScimGroup, ScimUser } from '../types.js';
import { isUniqueViolation, type PgDatabase, type Tx } from './pg-db.js';
import { type ConfigRow, type GroupRow, keyOf, toConfig, toUser, type UserRow } from './sqlite-scim.js';

type ScimReads = Pick<
  AccessRepository,
  'getScimConfig' | 'getScimConfigByToken' | 'getScimUser' | 'findScimUserByUserName' | 'listScimUsers' | 'getScimGroup' | 'listScimGroups' | 'listScimGroupsOf'
>;

/** The writes and guards inside one transaction, for composing into applyAccessChanges (pg-access.ts). */
export interface PgScimWrites {
  putConfig(tx: Tx, config: ScimConfig): Promise<void>;
  putUser(tx: Tx, user: ScimUser): Promise<void>;
  deleteUser(tx: Tx, orgId: string, identityId: string): Promise<void>;
  putGroup(tx: Tx, group: ScimGroup): Promise<void>;
  deleteGroup(tx: Tx, orgId: string, groupId: string): Promise<void>;
  requireVersion(tx: Tx, orgId: string, resource: 'user' | 'group', id: string, version: number): Promise<void>;
}

// A group with its members (in identity order) in one statement: one snapshot, so a reader never sees
// the members of a concurrent put half replaced.
const GROUP = `SELECT g.*, array(
    SELECT m.identity_id FROM scim_group_members m WHERE m.org_id = g.org_id AND m.group_id = g.group_id ORDER BY m.identity_id
  ) AS members FROM scim_groups g`;

type GroupWithMembers = GroupRow & { members: string[] };

const toGroup = (row: GroupWithMembers): ScimGroup => ({
  orgId: row.org_id,
  groupId: row.group_id,
  displayName: row.display_name,
  externalId: row.external_id,
  members: row.members,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  version: row.version,
});

const userNameTaken = (user: ScimUser): StrataError => new StrataError('SCIM_USERNAME_TAKEN', { details: { userName: user.userName } });
const groupNameTaken = (group: ScimGroup): StrataError => new StrataError('SCIM_GROUP_NAME_TAKEN', { details: { displayName: group.displayName } });

export function createPgScim(db: PgDatabase): { reads: ScimReads; writes: PgScimWrites } {
  const config = async (sql: string, param: string) => {
    const row = await db.one<ConfigRow>(sql, [param]);
    return row === undefined ? null : toConfig(row);
  };
  const user = async (sql: string, params: unknown[]) => {
    const row = await db.one<UserRow>(sql, params);
    return row === undefined ? null : toUser(row);
  };
  return {
    reads: {
      getScimConfig: (orgId) => config('SELECT * FROM scim_configs WHERE org_id = $1', orgId),
      getScimConfigByToken: (tokenId) => config('SELECT * FROM scim_configs WHERE token_id = $1', tokenId),
      getScimUser: (orgId, identityId) => user('SELECT * FROM scim_users WHERE org_id = $1 AND identity_id = $2', [orgId, identityId]),
      findScimUserByUserName: (orgId, userName) => user('SELECT * FROM scim_users WHERE org_id = $1 AND user_name_key = $2', [orgId, keyOf(userName)]),
      listScimUsers: async (orgId) => (await db.query<UserRow>('SELECT * FROM scim_users WHERE org_id = $1 ORDER BY created_at, identity_id', [orgId])).map(toUser),
      getScimGroup: async (orgId, groupId) => {
        const row = await db.one<GroupWithMembers>(`${GROUP} WHERE g.org_id = $1 AND g.group_id = $2`, [orgId, groupId]);
        return row === undefined ? null : toGroup(row);
      },
      listScimGroups: async (orgId) => (await db.query<GroupWithMembers>(`${GROUP} WHERE g.org_id = $1 ORDER BY g.created_at, g.group_id`, [orgId])).map(toGroup),
      listScimGroupsOf: async (orgId, identityId) =>
        (
          await db.query<GroupWithMembers>(
            `${GROUP} WHERE g.org_id = $1 AND EXISTS (SELECT 1 FROM scim_group_members o WHERE o.org_id = g.org_id AND o.group_id = g.group_id AND o.identity_id = $2)
             ORDER BY g.display_name_key`,
            [orgId, identityId],
          )
        ).map(toGroup),
    },
    writes: {
      async putConfig(tx, c) {
        await tx.query(
          `INSERT INTO scim_configs (org_id, token_id, secret_hmac, created_at, default_role, group_roles) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (org_id) DO UPDATE SET token_id = excluded.token_id, secret_hmac = excluded.secret_hmac, created_at = excluded.created_at,
             default_role = excluded.default_role, group_roles = excluded.group_roles`,
          [c.orgId, c.tokenId, c.secretHmac, c.createdAt, c.defaultRole, JSON.stringify(c.groupRoles)],
        );
      },
      async putUser(tx, u) {
        const key = keyOf(u.userName);
        const owner = await tx.one<{ identity_id: string }>('SELECT identity_id FROM scim_users WHERE org_id = $1 AND user_name_key = $2', [u.orgId, key]);
        if (owner !== undefined && owner.identity_id !== u.identityId) throw userNameTaken(u);
        try {
          await tx.query(
            `INSERT INTO scim_users (org_id, identity_id, user_name, user_name_key, external_id, active, attributes, created_at, updated_at, version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (org_id, identity_id) DO UPDATE SET user_name = excluded.user_name, user_name_key = excluded.user_name_key,
               external_id = excluded.external_id, active = excluded.active, attributes = excluded.attributes, updated_at = excluded.updated_at,
               version = excluded.version`,
            [u.orgId, u.identityId, u.userName, key, u.externalId, u.active ? 1 : 0, JSON.stringify(u.attributes), u.createdAt, u.updatedAt, u.version],
          );
        } catch (error) {
          // Another user took the name in a transaction the check above could not see yet (one that did
          // not hold the access lock): the unique index waited for it, then refused this row.
          if (isUniqueViolation(error, 'scim_users_by_name')) throw userNameTaken(u);
          throw error;
        }
      },
      async deleteUser(tx, orgId, identityId) {
        await tx.query('DELETE FROM scim_users WHERE org_id = $1 AND identity_id = $2', [orgId, identityId]);
        await tx.query('DELETE FROM scim_group_members WHERE org_id = $1 AND identity_id = $2', [orgId, identityId]);
      },
      async putGroup(tx, g) {
        const key = keyOf(g.displayName);
        const owner = await tx.one<{ group_id: string }>('SELECT group_id FROM scim_groups WHERE org_id = $1 AND display_name_key = $2', [g.orgId, key]);
        if (owner !== undefined && owner.group_id !== g.groupId) throw groupNameTaken(g);
        try {
          await tx.query(
            `INSERT INTO scim_groups (org_id, group_id, display_name, display_name_key, external_id, created_at, updated_at, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (org_id, group_id) DO UPDATE SET display_name = excluded.display_name, display_name_key = excluded.display_name_key,
               external_id = excluded.external_id, updated_at = excluded.updated_at, version = excluded.version`,
            [g.orgId, g.groupId, g.displayName, key, g.externalId, g.createdAt, g.updatedAt, g.version],
          );
        } catch (error) {
          if (isUniqueViolation(error, 'scim_groups_by_name')) throw groupNameTaken(g);
          throw error;
        }
        await tx.query('DELETE FROM scim_group_members WHERE org_id = $1 AND group_id = $2', [g.orgId, g.groupId]);
        // All members in one statement; a member listed twice is kept once (SQLite's INSERT OR IGNORE).
        if (g.members.length > 0) {
          await tx.query(
            'INSERT INTO scim_group_members (org_id, group_id, identity_id) SELECT $1, $2, m FROM unnest($3::text[]) AS m ON CONFLICT DO NOTHING',
            [g.orgId, g.groupId, g.members],
          );
        }
      },
      async deleteGroup(tx, orgId, groupId) {
        await tx.query('DELETE FROM scim_groups WHERE org_id = $1 AND group_id = $2', [orgId, groupId]);
        await tx.query('DELETE FROM scim_group_members WHERE org_id = $1 AND group_id = $2', [orgId, groupId]);
      },
      async requireVersion(tx, orgId, resource, id, version) {
        // FOR UPDATE: the row stays as read until this transaction's put of it commits, so two changes
        // from the same version cannot both pass, with or without the access lock (the second waits,
        // then reads the first's version and fails).
        const row =
          resource === 'user'
            ? await tx.one<{ version: number }>('SELECT version FROM scim_users WHERE org_id = $1 AND identity_id = $2 FOR UPDATE', [orgId, id])
            : await tx.one<{ version: number }>('SELECT version FROM scim_groups WHERE org_id = $1 AND group_id = $2 FOR UPDATE', [orgId, id]);
        if (row?.version !== version) throw new StrataError('SCIM_VERSION_MISMATCH', { details: { resource, id } });
      },
    },
  };
}
