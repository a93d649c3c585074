// Roles and capabilities as ordered levels, so "never above" and "narrow to" are plain comparisons.

import type { OrgRole, ProjectAccess } from '../types.js';

/** read: viewer+; write: member+; manage: admin+ (retention, policy, members, keys of others) */
export type Action = 'read' | 'write' | 'manage';

export const ORG_ROLES: readonly OrgRole[] = ['viewer', 'member', 'admin', 'owner'];

const ROLE_RANK: Record<OrgRole, number> = { viewer: 1, member: 2, admin: 3, owner: 4 };
const ACTION_RANK: Record<Action, number> = { read: 1, write: 2, manage: 3 };
const ROLE_CAPABILITY: Record<OrgRole, number> = { viewer: 1, member: 2, admin: 3, owner: 3 };
const ACCESS_CAPABILITY: Record<ProjectAccess, number> = { read: 1, write: 2 };

export function roleAtLeast(role: OrgRole, minimum: OrgRole): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[minimum];
}

export function lowerRole(a: OrgRole, b: OrgRole): OrgRole {
  return ROLE_RANK[a] <= ROLE_RANK[b] ? a : b;
}

/**
 * What a role may do on a project. A project membership row narrows it: effective = min(role, access),
 * so an admin with a `read` membership on a project can only read that project.
 */
export function projectCapability(role: OrgRole, access: ProjectAccess | null): number {
  const fromRole = ROLE_CAPABILITY[role];
  return access === null ? fromRole : Math.min(fromRole, ACCESS_CAPABILITY[access]);
}

export function allows(capability: number, action: Action): boolean {
  return capability >= ACTION_RANK[action];
}

export function roleAllows(role: OrgRole, action: Action): boolean {
  return allows(ROLE_CAPABILITY[role], action);
}
