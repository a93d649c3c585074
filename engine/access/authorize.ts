// Request context → decisions. Authentication only says who is calling; every resource access is
// decided here from the organization role, the project membership (which can only narrow the role),
// and the credential's project scope. Anything the caller may not see is reported exactly like
// something that does not exist (404), so ids cannot be probed.

import { StrataError } from '../errors.js';
import type { Organization, OrgRole, Project } from '../types.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';
import { type Action, allows, lowerRole, projectCapability, roleAllows } from './roles.js';

export interface ProjectGrant {
  project: Project;
  role: OrgRole;
}

export interface OrgGrant {
  org: Organization;
  role: OrgRole;
}

/**
 * The caller's role in an organization: their membership, lowered to the credential's cap (a person's
 * own API key made for a narrower job). null: not a member.
 */
export async function callerRole(deps: AccessDeps, principal: Principal, orgId: string): Promise<OrgRole | null> {
  const role = await deps.repository.access.getOrgRole(orgId, principal.identity.identityId);
  if (role === null || principal.roleCap === null) return role;
  return lowerRole(role, principal.roleCap);
}

function projectNotFound(projectId: string): StrataError {
  return new StrataError('PROJECT_NOT_FOUND', { details: { projectId } });
}

function forbidden(action: Action, target: string): StrataError {
  return new StrataError('FORBIDDEN', { message: `Not permitted to ${action} ${target}`, details: { action } });
}

/**
 * `narrow: false` ignores project memberships: used for administering the project itself (its
 * member list), which is an organization function — otherwise an admin narrowed to read on a project
 * could never be un-narrowed by anyone but an owner.
 */
export async function authorizeProject(
  deps: AccessDeps,
  principal: Principal,
  projectId: string,
  action: Action,
  options: { narrow?: boolean } = {},
): Promise<ProjectGrant> {
  if (principal.projectScope !== null && principal.projectScope !== projectId) throw projectNotFound(projectId);
  const project = await deps.repository.projects.get(projectId);
  if (project === null) throw projectNotFound(projectId);
  if (principal.orgId !== null && principal.orgId !== project.orgId) throw projectNotFound(projectId);
  const access = deps.repository.access;
  const identityId = principal.identity.identityId;
  const role = await callerRole(deps, principal, project.orgId);
  if (role === null) throw projectNotFound(projectId);
  const membership = options.narrow === false ? null : await access.getProjectAccess(projectId, identityId);
  if (!allows(projectCapability(role, membership), action)) throw forbidden(action, 'this project');
  return { project, role };
}

/**
 * Organization-level routes. A project-scoped credential is refused (403) unless the route says it is
 * fine for one (`allowProjectScoped`, e.g. listing its own keys).
 */
export async function authorizeOrg(
  deps: AccessDeps,
  principal: Principal,
  orgId: string,
  action: Action,
  options: { allowProjectScoped?: boolean } = {},
): Promise<OrgGrant> {
  const notFound = new StrataError('ORG_NOT_FOUND', { details: { orgId } });
  if (principal.orgId !== null && principal.orgId !== orgId) throw notFound;
  const org = await deps.repository.access.getOrganization(orgId);
  if (org === null) throw notFound;
  const role = await callerRole(deps, principal, orgId);
  if (role === null) throw notFound;
  if (principal.projectScope !== null && options.allowProjectScoped !== true) {
    throw new StrataError('FORBIDDEN', {
      message: 'A project-scoped credential cannot use organization routes',
      details: { action, scope: 'project' },
    });
  }
  if (!roleAllows(role, action)) throw forbidden(action, 'this organization');
  return { org, role };
}

/** The organizations the caller belongs to (only the credential's own for an API key). */
export async function callerOrganizations(deps: AccessDeps, principal: Principal): Promise<Array<{ org: Organization; role: OrgRole }>> {
  const memberships = await deps.repository.access.listOrgsOf(principal.identity.identityId);
  const result: Array<{ org: Organization; role: OrgRole }> = [];
  for (const membership of memberships) {
    if (principal.orgId !== null && membership.orgId !== principal.orgId) continue;
    const org = await deps.repository.access.getOrganization(membership.orgId);
    if (org !== null) result.push({ org, role: principal.roleCap === null ? membership.role : lowerRole(membership.role, principal.roleCap) });
  }
  return result;
}

/** The organization a request means when it names none: the credential's, or the caller's only one. */
export async function defaultOrgId(deps: AccessDeps, principal: Principal): Promise<string> {
  if (principal.orgId !== null) return principal.orgId;
  const orgs = await callerOrganizations(deps, principal);
  if (orgs.length === 1) return orgs[0]!.org.orgId;
  throw new StrataError('INVALID_ARGUMENT', {
    message: 'orgId is required: the caller belongs to more than one organization',
    details: { field: 'orgId' },
  });
}

/** Projects the caller can see, optionally in one organization. */
export async function visibleProjects(deps: AccessDeps, principal: Principal, orgId?: string): Promise<Project[]> {
  if (principal.projectScope !== null) {
    const project = await deps.repository.projects.get(principal.projectScope);
    if (project === null || (orgId !== undefined && project.orgId !== orgId)) return [];
    const role = await deps.repository.access.getOrgRole(project.orgId, principal.identity.identityId);
    return role === null ? [] : [project];
  }
  const projects: Project[] = [];
  for (const { org } of await callerOrganizations(deps, principal)) {
    if (orgId !== undefined && org.orgId !== orgId) continue;
    projects.push(...(await deps.repository.projects.list(org.orgId)));
  }
  return projects;
}
