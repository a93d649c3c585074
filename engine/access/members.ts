// Organization roles and project memberships. Changes are audited; an organization always keeps at
// least one owner; only an owner can make or unmake an owner.

import { StrataError } from '../errors.js';
import { isoTimestamp } from '../ports/world.js';
import type { AuditRecord, Identity, IdentityKind, OrgMembership, OrgRole, Page, ProjectAccess, ProjectMembership } from '../types.js';
import { keyRevocation } from './api-keys.js';
import { auditChange } from './audit.js';
import { authorizeOrg, authorizeProject, callerRole } from './authorize.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';
import { roleAtLeast } from './roles.js';

function requireOwnerFor(actorRole: OrgRole, ...roles: Array<OrgRole | null>): void {
  if (actorRole !== 'owner' && roles.includes('owner')) {
    throw new StrataError('FORBIDDEN', { message: 'Only an owner can grant or change the owner role', details: { field: 'role' } });
  }
}

/**
 * A project membership narrows what its identity may do there: an admin narrowing an owner to `read`
 * would lock the owner out of their own project. Nobody changes the access of a role above their own.
 */
async function requireNotAbove(deps: AccessDeps, principal: Principal, orgId: string, identityId: string, targetRole: OrgRole | null): Promise<void> {
  if (targetRole === null || identityId === principal.identity.identityId) return;
  const actorRole = await callerRole(deps, principal, orgId);
  if (actorRole === null || !roleAtLeast(actorRole, targetRole)) {
    throw new StrataError('FORBIDDEN', { message: `This identity has the ${targetRole} role, above yours: you cannot change its project access`, details: { identityId } });
  }
}


export async function listOrgMembers(deps: AccessDeps, principal: Principal, orgId: string): Promise<OrgMembership[]> {
  await authorizeOrg(deps, principal, orgId, 'read');
  return deps.repository.access.listOrgMembers(orgId);
}

export async function createOrgIdentity(
  deps: AccessDeps,
  principal: Principal,
  input: { orgId: string; kind: IdentityKind; name: string; email?: string | null; role?: OrgRole },
): Promise<{ identity: Identity; membership: OrgMembership }> {
  const grant = await authorizeOrg(deps, principal, input.orgId, 'manage');
  const role = input.role ?? 'member';
  requireOwnerFor(grant.role, role);
  const identity: Identity = {
    identityId: deps.ids.uuid(),
    kind: input.kind,
    name: input.name,
    email: input.email ?? null,
    createdAt: new Date(deps.clock.now()).toISOString(),
  };
  const membership: OrgMembership = { orgId: input.orgId, identityId: identity.identityId, role };
  await deps.repository.access.applyAccessChanges([
    { kind: 'createIdentity', identity },
    { kind: 'setOrgRole', membership },
    auditChange(deps, {
      orgId: input.orgId,
      actorId: principal.identity.identityId,
      action: 'identity.create',
      target: identity.identityId,
      details: { identityId: identity.identityId, kind: identity.kind, role },
    }),
  ]);
  return { identity, membership };
}

export async function setOrgRole(
  deps: AccessDeps,
  principal: Principal,
  input: { orgId: string; identityId: string; role: OrgRole },
): Promise<OrgMembership> {
  const grant = await authorizeOrg(deps, principal, input.orgId, 'manage');
  const access = deps.repository.access;
  if ((await access.getIdentity(input.identityId)) === null) throw new StrataError('USER_NOT_FOUND', { details: { identityId: input.identityId } });
  const current = await access.getOrgRole(input.orgId, input.identityId);
  requireOwnerFor(grant.role, current, input.role);
  const membership: OrgMembership = { orgId: input.orgId, identityId: input.identityId, role: input.role };
  if (current !== input.role) {
    // The last-owner guard runs inside the write's transaction: two owners demoting each other at
    // once cannot both succeed.
    await access.applyAccessChanges([
      ...(current === 'owner' ? [{ kind: 'requireAnotherOwner' as const, orgId: input.orgId, identityId: input.identityId }] : []),
      { kind: 'setOrgRole', membership },
      auditChange(deps, {
        orgId: input.orgId,
        actorId: principal.identity.identityId,
        action: 'org.role.set',
        target: input.identityId,
        details: { identityId: input.identityId, from: current, to: input.role },
      }),
    ]);
  }
  return membership;
}

export async function removeOrgMember(deps: AccessDeps, principal: Principal, input: { orgId: string; identityId: string }): Promise<void> {
  const grant = await authorizeOrg(deps, principal, input.orgId, 'manage');
  const access = deps.repository.access;
  const current = await access.getOrgRole(input.orgId, input.identityId);
  if (current === null) throw new StrataError('USER_NOT_FOUND', { details: { identityId: input.identityId } });
  requireOwnerFor(grant.role, current);
  // The keys they hold go with them, as when the directory deactivates them (scim/provisioning.ts):
  // a service key they made would otherwise keep their access after they left, and a key acting as
  // them would come back to life if they were ever added again.
  const revokedAt = isoTimestamp(deps.clock);
  const keys = (await access.listApiKeys(input.orgId)).filter(
    (key) => key.revokedAt === null && (key.ownerId === input.identityId || key.identityId === input.identityId),
  );
  await access.applyAccessChanges([
    ...(current === 'owner' ? [{ kind: 'requireAnotherOwner' as const, orgId: input.orgId, identityId: input.identityId }] : []),
    { kind: 'removeOrgMember', orgId: input.orgId, identityId: input.identityId },
    ...keys.flatMap((key) => keyRevocation(key, revokedAt)),
    auditChange(deps, {
      orgId: input.orgId,
      actorId: principal.identity.identityId,
      action: 'org.member.remove',
      target: input.identityId,
      details: { identityId: input.identityId, from: current, revokedKeys: keys.map((key) => key.keyId).join(' ') },
    }),
  ]);
}

export async function listProjectMembers(deps: AccessDeps, principal: Principal, projectId: string): Promise<ProjectMembership[]> {
  await authorizeProject(deps, principal, projectId, 'read');
  return deps.repository.access.listProjectMembers(projectId);
}

/** Memberships are administered at organization level (admin+), not through the narrowed access. */
export async function setProjectAccess(
  deps: AccessDeps,
  principal: Principal,
  input: { projectId: string; identityId: string; access: ProjectAccess },
): Promise<ProjectMembership> {
  const { project } = await authorizeProject(deps, principal, input.projectId, 'manage', { narrow: false });
  const access = deps.repository.access;
  const targetRole = await access.getOrgRole(project.orgId, input.identityId);
  if (targetRole === null) {
    throw new StrataError('USER_NOT_FOUND', { message: 'Not a member of the project’s organization', details: { identityId: input.identityId } });
  }
  await requireNotAbove(deps, principal, project.orgId, input.identityId, targetRole);
  const previous = await access.getProjectAccess(input.projectId, input.identityId);
  const membership: ProjectMembership = { projectId: input.projectId, identityId: input.identityId, access: input.access };
  await access.applyAccessChanges([
    { kind: 'setProjectAccess', membership },
    auditChange(deps, {
      orgId: project.orgId,
      actorId: principal.identity.identityId,
      action: 'project.access.set',
      target: input.identityId,
      details: { projectId: input.projectId, identityId: input.identityId, from: previous, to: input.access },
    }),
  ]);
  return membership;
}

export async function removeProjectAccess(deps: AccessDeps, principal: Principal, input: { projectId: string; identityId: string }): Promise<void> {
  const { project } = await authorizeProject(deps, principal, input.projectId, 'manage', { narrow: false });
  const access = deps.repository.access;
  const previous = await access.getProjectAccess(input.projectId, input.identityId);
  if (previous === null) throw new StrataError('USER_NOT_FOUND', { details: { identityId: input.identityId } });
  await requireNotAbove(deps, principal, project.orgId, input.identityId, await access.getOrgRole(project.orgId, input.identityId));
  await access.applyAccessChanges([
    { kind: 'removeProjectMember', projectId: input.projectId, identityId: input.identityId },
    auditChange(deps, {
      orgId: project.orgId,
      actorId: principal.identity.identityId,
      action: 'project.access.remove',
      target: input.identityId,
      details: { projectId: input.projectId, identityId: input.identityId, from: previous },
    }),
  ]);
}

export async function listAudit(
  deps: AccessDeps,
  principal: Principal,
  input: { orgId: string; cursor?: string; limit: number },
): Promise<Page<AuditRecord>> {
  await authorizeOrg(deps, principal, input.orgId, 'manage');
  const options: { cursor?: string; limit: number } = { limit: input.limit };
  if (input.cursor !== undefined) options.cursor = input.cursor;
  return deps.repository.access.listAudit(input.orgId, options);
}
