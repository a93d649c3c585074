// The caller, as `GET /auth/me` shows it: who they are here, how they authenticated, their
// organizations with roles, the project memberships that narrow those roles, and their preferences.

import { StrataError } from '../errors.js';
import type { OrgRole, ProjectAccess } from '../types.js';
import { callerOrganizations } from './authorize.js';
import type { Principal } from './context.js';
import type { AccessDeps } from './deps.js';

/** Preferences are a person's small settings (UI, defaults), not a data store. */
export const MAX_PREFERENCES_BYTES = 16 * 1024;

export interface CallerDescription {
  identity: Principal['identity'];
  authKind: Principal['authKind'];
  keyId: string | null;
  projectScope: string | null;
  organizations: Array<{ orgId: string; name: string; role: OrgRole }>;
  memberships: Array<{ projectId: string; orgId: string; name: string; access: ProjectAccess }>;
  preferences: Record<string, unknown>;
}

export async function describeCaller(deps: AccessDeps, principal: Principal): Promise<CallerDescription> {
  const access = deps.repository.access;
  const identityId = principal.identity.identityId;
  const [orgs, rows, preferences] = await Promise.all([
    callerOrganizations(deps, principal),
    access.listProjectMembershipsOf(identityId),
    access.getPreferences(identityId),
  ]);
  const orgIds = new Set(orgs.map(({ org }) => org.orgId));
  const memberships: CallerDescription['memberships'] = [];
  for (const row of rows) {
    if (principal.projectScope !== null && row.projectId !== principal.projectScope) continue;
    const project = await deps.repository.projects.get(row.projectId);
    // Memberships in organizations this credential does not speak for stay invisible.
    if (project === null || !orgIds.has(project.orgId)) continue;
    memberships.push({ projectId: project.projectId, orgId: project.orgId, name: project.name, access: row.access });
  }
  return {
    identity: principal.identity,
    authKind: principal.authKind,
    keyId: principal.keyId,
    projectScope: principal.projectScope,
    organizations: orgs.map(({ org, role }) => ({ orgId: org.orgId, name: org.name, role })),
    memberships,
    preferences,
  };
}

/**
 * Merges `patch` into the caller's preferences (RFC 7396 style: a null value removes the key) and
 * returns the result. Preferences belong to the identity, whichever credential changes them.
 */
export async function updatePreferences(deps: AccessDeps, principal: Principal, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
  const identityId = principal.identity.identityId;
  const current = await deps.repository.access.getPreferences(identityId);
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  const bytes = Buffer.byteLength(JSON.stringify(next));
  if (bytes > MAX_PREFERENCES_BYTES) {
    throw new StrataError('PREFERENCES_TOO_LARGE', { details: { field: 'preferences', bytes, limit: MAX_PREFERENCES_BYTES } });
  }
  await deps.repository.access.applyAccessChanges([{ kind: 'setPreferences', identityId, preferences: next }]);
  return next;
}
