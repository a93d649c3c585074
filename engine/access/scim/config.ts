// SCIM set-up of an organization (admin+): its bearer token `scim.<tokenId>.<secret>` (shown once,
// only its HMAC stored; issuing a new one replaces the old at once) and how directory groups map to
// organization roles. And the token check every `/scim/v2` request goes through.

import { StrataError } from '../../errors.js';
import { isoTimestamp } from '../../ports/world.js';
import type { OrgRole, ScimConfig } from '../../types.js';
import { generateKeyMaterial, hmacSecret, secretMatches } from '../api-key-format.js';
import { auditChange } from '../audit.js';
import { unauthenticated } from '../authenticate.js';
import { authorizeOrg } from '../authorize.js';
import type { Principal } from '../context.js';
import type { AccessDeps } from '../deps.js';

const TOKEN_RE = /^scim\.([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;
export type ProvisionedRole = Exclude<OrgRole, 'owner'>;
const PROVISIONED_ROLES: readonly ProvisionedRole[] = ['viewer', 'member', 'admin'];

/** What an admin sees of the set-up: never the secret nor its HMAC. */
export interface ScimSettings {
  orgId: string;
  tokenId: string;
  createdAt: string;
  defaultRole: ProvisionedRole;
  groupRoles: Record<string, ProvisionedRole>;
}

const settingsOf = ({ secretHmac: _hidden, ...rest }: ScimConfig): ScimSettings => rest;

export async function getScimSettings(deps: AccessDeps, principal: Principal, orgId: string): Promise<ScimSettings> {
  await authorizeOrg(deps, principal, orgId, 'manage');
  const config = await deps.repository.access.getScimConfig(orgId);
  if (config === null) throw new StrataError('SCIM_NOT_CONFIGURED', { details: { orgId } });
  return settingsOf(config);
}

/** Issues the organization's SCIM token (replacing any previous one, which stops working at once). */
export async function issueScimToken(deps: AccessDeps, principal: Principal, orgId: string): Promise<{ token: string; settings: ScimSettings }> {
  await authorizeOrg(deps, principal, orgId, 'manage');
  const previous = await deps.repository.access.getScimConfig(orgId);
  const { keyId: tokenId, secret } = generateKeyMaterial(deps.ids);
  const config: ScimConfig = {
    orgId,
    tokenId,
    secretHmac: hmacSecret(deps.pepper, secret),
    createdAt: isoTimestamp(deps.clock),
    defaultRole: previous?.defaultRole ?? 'member',
    groupRoles: previous?.groupRoles ?? {},
  };
  await deps.repository.access.applyAccessChanges([
    { kind: 'putScimConfig', config },
    auditChange(deps, { orgId, actorId: principal.identity.identityId, action: 'scim.token', target: tokenId, details: { tokenId, replaced: previous?.tokenId ?? null } }),
  ]);
  return { token: `scim.${tokenId}.${secret}`, settings: settingsOf(config) };
}

export async function setScimRoles(
  deps: AccessDeps,
  principal: Principal,
  input: { orgId: string; defaultRole: ProvisionedRole; groupRoles: Record<string, ProvisionedRole> },
): Promise<ScimSettings> {
  await authorizeOrg(deps, principal, input.orgId, 'manage');
  for (const role of [input.defaultRole, ...Object.values(input.groupRoles)]) {
    if (!PROVISIONED_ROLES.includes(role)) {
      throw new StrataError('INVALID_ARGUMENT', { message: 'Provisioned roles are viewer, member or admin (owners are made by hand)', details: { field: 'groupRoles' } });
    }
  }
  const config = await deps.repository.access.getScimConfig(input.orgId);
  if (config === null) throw new StrataError('SCIM_NOT_CONFIGURED', { details: { orgId: input.orgId } });
  const next: ScimConfig = { ...config, defaultRole: input.defaultRole, groupRoles: input.groupRoles };
  await deps.repository.access.applyAccessChanges([
    { kind: 'putScimConfig', config: next },
    auditChange(deps, {
      orgId: input.orgId,
      actorId: principal.identity.identityId,
      action: 'scim.roles',
      target: input.orgId,
      details: { defaultRole: input.defaultRole, groupRoles: JSON.stringify(input.groupRoles) },
    }),
  ]);
  return settingsOf(next);
}

/** The organization a SCIM bearer token belongs to; the same 401 for every kind of bad token. */
export async function authenticateScimToken(deps: AccessDeps, credential: string): Promise<ScimConfig> {
  const match = credential.length <= 80 ? TOKEN_RE.exec(credential) : null;
  const config = match === null ? null : await deps.repository.access.getScimConfigByToken(match[1]!);
  // Always one HMAC and one comparison, whatever failed.
  const ok = secretMatches(deps.pepper, match?.[2] ?? '', config?.secretHmac ?? null);
  if (config === null || !ok) throw unauthenticated();
  return config;
}
